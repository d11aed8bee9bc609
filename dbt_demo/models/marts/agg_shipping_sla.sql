select
    carrier,
    cast(shipped_ts as date) as ship_date,
    count(*) as shipments,
    avg(hours_to_ship) as avg_hours_to_ship,
    avg(hours_in_transit) as avg_hours_in_transit,
    cast(sum(shipping_cost) as decimal(12, 2)) as shipping_cost
from {{ ref('fct_shipments') }}
group by 1, 2
