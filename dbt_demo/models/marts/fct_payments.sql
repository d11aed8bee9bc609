select payment_id, order_id, payment_method, amount, paid_ts, cast(paid_ts as date) as paid_date
from {{ ref('stg_payments') }}
