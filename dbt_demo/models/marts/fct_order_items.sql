select
    i.order_item_id,
    i.order_id,
    o.order_date,
    i.product_id,
    i.category,
    i.quantity,
    i.unit_price,
    i.line_amount,
    i.line_cost
from {{ ref('int_order_items_enriched') }} as i
join {{ ref('stg_orders') }} as o using (order_id)
