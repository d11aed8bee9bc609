select merchant_id, paid_on, count(*) as payments, sum(amount) as takings
from {{ ref('stg_payments') }}
group by all
