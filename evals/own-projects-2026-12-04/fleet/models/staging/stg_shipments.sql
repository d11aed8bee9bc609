select
    shipment_id,
    vehicle_id,
    driver_id,
    depot_id,
    promised_at,
    cast(promised_at as date) as promised_on,
    delivered_at,
    lower(status)             as status,
    weight_kg
from {{ source('dispatch', 'shipments') }}
