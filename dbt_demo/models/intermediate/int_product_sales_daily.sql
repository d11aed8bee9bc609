select
    o.order_date,
    i.product_id,
    i.category,
    sum(i.quantity) as units_sold,
    cast(sum(i.line_amount) as decimal(14, 2)) as revenue,
    cast(sum(i.line_cost) as decimal(14, 2)) as cost
from {{ ref('int_order_items_enriched') }} as i
join {{ ref('stg_orders') }} as o using (order_id)
where o.status != 'cancelled'
group by 1, 2, 3
