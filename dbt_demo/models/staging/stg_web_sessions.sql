select
    session_id,
    customer_id,
    session_date,
    traffic_source,
    pageviews,
    converted
from {{ source('shop', 'web_sessions') }}
