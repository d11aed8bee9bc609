select
    acct_key,
    event_day,
    count(*) as events,
    count(distinct contact_ref) as active_contacts,
    sum(duration_ms) as total_duration_ms
from {{ ref('base_events') }}
where event_type in ('login', 'feature_use', 'export')
group by acct_key, event_day
