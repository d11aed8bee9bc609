select payment_id, merchant_id, paid_at, cast(paid_at as date) as paid_on, amount
from {{ source('vendor', 'card_payments') }}
