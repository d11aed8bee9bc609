select
    r.return_id,
    r.order_id,
    r.order_item_id,
    r.return_date,
    r.reason,
    r.refund_amount,
    i.product_id,
    i.category
from {{ ref('stg_returns') }} as r
left join {{ ref('int_order_items_enriched') }} as i using (order_item_id)
