select
    t.trip_id,
    t.member_id,
    t.start_station_id,
    t.end_station_id,
    t.started_at,
    cast(t.started_at as date) as trip_date,
    t.duration_min,
    t.fare_cents,
    t.bike_type,
    s.district as start_district,
    p.amount_cents as paid_cents,
    p.payment_method
from {{ ref('stg_trips') }} as t
left join {{ ref('dim_stations') }} as s
    on s.station_id = t.start_station_id
left join {{ ref('stg_payments') }} as p
    on p.trip_id = t.trip_id
