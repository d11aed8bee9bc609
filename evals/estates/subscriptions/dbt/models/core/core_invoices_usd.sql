select
    i.inv_no,
    i.sub_ref,
    i.acct_key,
    i.issued_on,
    i.due_on,
    i.amount,
    i.currency,
    r.usd_rate,
    cast(i.amount * r.usd_rate as decimal(14, 2)) as amount_usd
from {{ ref('base_invoices') }} as i
left join {{ source('fx', 'rates') }} as r
    on r.currency = i.currency and r.rate_date = i.issued_on
