select
    event_day,
    sum(events) as events,
    count(distinct acct_key) as active_accounts,
    sum(total_duration_ms) as total_duration_ms
from {{ ref('core_usage_daily') }}
group by event_day
