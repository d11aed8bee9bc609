select
    txn_id                                          as fuel_event_id,
    cast(substr(vehicle_ref, 2) as integer)         as vehicle_id,
    txn_ts                                          as fuelled_at,
    cast(txn_ts as date)                            as fuelled_on,
    litres,
    price_per_litre,
    round(litres * price_per_litre, 2)              as cost_gbp,
    station_code
from {{ source('telematics_gateway', 'fuel_events') }}
