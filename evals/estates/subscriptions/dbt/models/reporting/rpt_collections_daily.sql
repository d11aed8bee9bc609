select
    issued_on,
    count(*) as invoices,
    cast(sum(amount_usd) as decimal(16, 2)) as invoiced_usd,
    cast(sum(paid_usd) as decimal(16, 2)) as collected_usd,
    count(*) filter (where is_overdue) as overdue_invoices
from {{ ref('core_collections') }}
group by issued_on
