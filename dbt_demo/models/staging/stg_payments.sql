select
    payment_id,
    order_id,
    method as payment_method,
    cast(amount as decimal(12, 2)) as amount,
    paid_ts
from {{ source('shop', 'payments') }}
