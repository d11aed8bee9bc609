select
    customer_id,
    lower(email) as email,
    first_name,
    last_name,
    country,
    segment,
    signup_date
from {{ source('shop', 'customers') }}
