-- Loans, one row per checkout, the ILS's column names kept as they are.
select
    loan_id,
    "user",
    "ItemBarcode",
    "from",
    "CheckoutTS",
    "due-date",
    "end",
    "late fee"
from {{ source('ils', 'loans') }}
