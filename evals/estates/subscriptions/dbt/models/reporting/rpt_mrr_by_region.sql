select
    a.region,
    count(distinct m.acct_key) as paying_accounts,
    cast(sum(m.mrr_usd) as decimal(16, 2)) as mrr_usd
from {{ ref('core_subscription_mrr') }} as m
join {{ ref('base_accounts') }} as a using (acct_key)
group by a.region
