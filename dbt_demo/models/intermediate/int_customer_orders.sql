select
    customer_id,
    count(*) as order_count,
    min(order_date) as first_order_date,
    max(order_date) as last_order_date,
    cast(sum(net_amount) as decimal(14, 2)) as lifetime_net_revenue
from {{ ref('int_orders_enriched') }}
where status != 'cancelled'
group by customer_id
