select
    trip_date,
    count(*) as trips,
    sum(fare_cents) as fare_cents,
    coalesce(sum(paid_cents), 0) as revenue_cents,
    avg(case when bike_type = 'electric' then 1.0 else 0.0 end) as electric_share
from {{ ref('fct_trips') }}
group by trip_date
