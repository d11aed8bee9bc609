select
    order_id,
    customer_id,
    order_ts,
    cast(order_ts as date) as order_date,
    status,
    channel,
    promo_code
from {{ source('shop', 'orders') }}
