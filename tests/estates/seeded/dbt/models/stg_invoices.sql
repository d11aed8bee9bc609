select id as invoice_id, account_id, issued_on, amount from {{ ref('raw_invoices') }}
