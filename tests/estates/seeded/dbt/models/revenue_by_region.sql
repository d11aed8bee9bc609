select a.region, count(*) as invoices, sum(i.amount) as revenue
from {{ ref('stg_invoices') }} as i
join {{ ref('stg_accounts') }} as a using (account_id)
group by a.region
