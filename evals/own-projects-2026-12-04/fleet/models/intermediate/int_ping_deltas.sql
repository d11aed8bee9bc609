{{ config(materialized='ephemeral') }}

-- Distance and time since the vehicle's previous ping on the same day.
with ordered as (
    select
        *,
        lag(odometer_km) over (partition by vehicle_id, ping_date order by ping_ts) as prev_odometer_km,
        lag(ping_ts)     over (partition by vehicle_id, ping_date order by ping_ts) as prev_ping_ts
    from {{ ref('stg_gps_pings') }}
)
select
    ping_id,
    vehicle_id,
    ping_date,
    ping_ts,
    engine_on,
    speed_kmh,
    coalesce(odometer_km - prev_odometer_km, 0)                         as km_delta,
    coalesce(date_diff('minute', prev_ping_ts, ping_ts), 0)             as minutes_delta,
    engine_on and coalesce(speed_kmh, 1) = 0                            as is_idle
from ordered
