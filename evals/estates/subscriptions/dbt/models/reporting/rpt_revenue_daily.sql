select
    issued_on,
    count(*) as invoices,
    cast(sum(amount_usd) as decimal(16, 2)) as revenue_usd
from {{ ref('core_invoices_usd') }}
group by issued_on
