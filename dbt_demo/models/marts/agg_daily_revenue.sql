select
    order_date,
    count(*) as orders,
    cast(sum(gross_amount) as decimal(14, 2)) as gross_revenue,
    cast(sum(discount_amount) as decimal(14, 2)) as discount_total,
    cast(sum(net_amount) as decimal(14, 2)) as net_revenue,
    cast(sum(refund_amount) as decimal(14, 2)) as refunds
from {{ ref('fct_orders') }}
where status != 'cancelled'
group by order_date
