with usage as (
    select acct_key, sum(events) as events_30d, max(event_day) as last_active_on
    from {{ ref('core_usage_daily') }}
    group by 1
),
mrr as (
    select acct_key, sum(mrr_usd) as mrr_usd from {{ ref('core_subscription_mrr') }} group by 1
)
select
    a.acct_key,
    a.account_name,
    a.region,
    a.segment,
    coalesce(mrr.mrr_usd, 0) as mrr_usd,
    coalesce(usage.events_30d, 0) as events_30d,
    usage.last_active_on,
    case
        when mrr.mrr_usd is null then null
        else least(100, coalesce(usage.events_30d, 0) / 2)
    end as health_score
from {{ ref('base_accounts') }} as a
left join mrr using (acct_key)
left join usage using (acct_key)
