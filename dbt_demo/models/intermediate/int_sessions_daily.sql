select
    session_date,
    traffic_source,
    count(*) as sessions,
    sum(case when converted then 1 else 0 end) as converted_sessions,
    sum(pageviews) as pageviews
from {{ ref('stg_web_sessions') }}
group by 1, 2
