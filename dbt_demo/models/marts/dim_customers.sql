select
    c.customer_id,
    c.email,
    c.first_name,
    c.last_name,
    c.country,
    c.segment,
    c.signup_date,
    coalesce(o.order_count, 0) as order_count,
    o.first_order_date,
    o.last_order_date
from {{ ref('stg_customers') }} as c
left join {{ ref('int_customer_orders') }} as o using (customer_id)
