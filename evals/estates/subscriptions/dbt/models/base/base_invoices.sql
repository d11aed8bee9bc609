select
    inv_no,
    sub_ref,
    acct_key,
    issued_on,
    due_on,
    amount,
    lower(currency) as currency
from {{ source('billing', 'invoices') }}
