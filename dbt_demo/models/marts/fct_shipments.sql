select
    shipment_id,
    order_id,
    carrier,
    shipped_ts,
    delivered_ts,
    shipping_cost,
    hours_to_ship,
    hours_in_transit,
    delivered_ts is not null as is_delivered
from {{ ref('int_shipment_times') }}
