select
    order_id,
    count(*) as returned_items,
    cast(sum(refund_amount) as decimal(12, 2)) as refund_amount
from {{ ref('stg_returns') }}
group by order_id
