with paid as (
    select inv_no, sum(amount_paid) as paid, min(paid_on) as first_paid_on
    from {{ ref('base_payments') }}
    group by inv_no
)
select
    i.inv_no,
    i.acct_key,
    i.issued_on,
    i.due_on,
    i.amount_usd,
    cast(coalesce(paid.paid, 0) * i.usd_rate as decimal(14, 2)) as paid_usd,
    paid.first_paid_on,
    paid.first_paid_on - i.issued_on as days_to_pay,
    paid.inv_no is null and i.due_on < cast({{ current_timestamp() }} as date) as is_overdue
from {{ ref('core_invoices_usd') }} as i
left join paid using (inv_no)
