select
    return_id,
    order_id,
    order_item_id,
    return_ts,
    cast(return_ts as date) as return_date,
    reason,
    cast(refund_amount as decimal(10, 2)) as refund_amount
from {{ source('shop', 'returns') }}
