select
    s.sub_ref,
    s.acct_key,
    s.plan_code,
    s.seats,
    s.started_on,
    cast(s.seats * c.monthly_price_usd as decimal(14, 2)) as mrr_usd
from {{ ref('base_subscriptions') }} as s
join {{ ref('core_plan_catalog') }} as c using (plan_code)
where s.status = 'active'
