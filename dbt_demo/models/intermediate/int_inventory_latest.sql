select
    product_id,
    snapshot_date,
    on_hand_qty,
    reorder_point,
    on_hand_qty < reorder_point as below_reorder_point
from {{ ref('stg_vendor_inventory') }}
qualify row_number() over (partition by product_id order by snapshot_date desc) = 1
