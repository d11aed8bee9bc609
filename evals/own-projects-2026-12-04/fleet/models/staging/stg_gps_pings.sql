{{ config(meta={'owner': 'telematics-eng'}) }}

select
    ping_id,
    vehicle_id,
    ping_ts,
    cast(ping_ts as date) as ping_date,
    latitude,
    longitude,
    speed_kmh,
    odometer_km,
    engine_on
from {{ source('telematics_gateway', 'gps_pings') }}
