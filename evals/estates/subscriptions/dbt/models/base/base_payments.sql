select
    pay_ref,
    inv_no,
    paid_at,
    cast(paid_at as date) as paid_on,
    amount_paid,
    method
from {{ source('billing', 'payments') }}
