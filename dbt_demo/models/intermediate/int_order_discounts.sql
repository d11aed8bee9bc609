select
    order_id,
    count(*) as discounts_applied,
    cast(sum(discount_amt) as decimal(12, 2)) as order_discount
from {{ ref('stg_vendor_discounts') }}
group by order_id
