select
    p.category,
    count(*) as products,
    sum(case when i.below_reorder_point then 1 else 0 end) as products_below_reorder,
    sum(i.on_hand_qty) as units_on_hand
from {{ ref('int_inventory_latest') }} as i
join {{ ref('dim_products') }} as p using (product_id)
group by 1
