select payment_id, merchant_id, paid_at, cast(paid_at as date) as paid_on, amount, "Card Type"
from {{ source('vendor', 'card_payments') }}
