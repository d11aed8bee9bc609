select
    s.shipment_id,
    s.order_id,
    s.carrier,
    o.order_ts,
    s.shipped_ts,
    s.delivered_ts,
    s.shipping_cost,
    date_diff('hour', o.order_ts, s.shipped_ts) as hours_to_ship,
    date_diff('hour', s.shipped_ts, s.delivered_ts) as hours_in_transit
from {{ ref('stg_vendor_shipments') }} as s
join {{ ref('stg_orders') }} as o using (order_id)
