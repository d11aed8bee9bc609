select
    event_ref,
    acct_key,
    contact_ref,
    event_type,
    feature,
    occurred_at,
    cast(occurred_at as date) as event_day,
    duration_ms
from {{ source('product', 'events') }}
where event_type <> 'heartbeat'
