select
    c.customer_id,
    c.segment,
    c.country,
    coalesce(o.order_count, 0) as order_count,
    coalesce(o.lifetime_net_revenue, 0) as lifetime_net_revenue
from {{ ref('dim_customers') }} as c
left join {{ ref('int_customer_orders') }} as o using (customer_id)
