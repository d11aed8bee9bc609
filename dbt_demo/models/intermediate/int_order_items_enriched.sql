select
    i.order_item_id,
    i.order_id,
    i.product_id,
    p.category,
    p.supplier_id,
    i.quantity,
    i.unit_price,
    i.line_amount,
    cast(i.quantity * p.unit_cost as decimal(12, 2)) as line_cost
from {{ ref('stg_order_items') }} as i
left join {{ ref('stg_products') }} as p using (product_id)
