select
    trip_id,
    member_id,
    start_station_id,
    end_station_id,
    started_at,
    ended_at,
    date_diff('minute', started_at, ended_at) as duration_min,
    fare_cents,
    bike_type
from {{ source('dock', 'trips') }}
