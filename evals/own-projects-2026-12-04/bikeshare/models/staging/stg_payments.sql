select
    payment_id,
    trip_id,
    amount_cents,
    "PaymentMethod" as payment_method,
    paid_at
from {{ source('billing', 'payments') }}
