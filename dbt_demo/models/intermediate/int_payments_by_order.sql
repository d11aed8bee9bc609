select
    order_id,
    count(*) as payment_count,
    cast(sum(amount) as decimal(12, 2)) as amount_paid,
    min(paid_ts) as first_paid_ts,
    max(payment_method) as payment_method
from {{ ref('stg_payments') }}
group by order_id
