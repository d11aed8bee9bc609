{{ config(materialized='view', meta={'owner': 'fleet-analytics'}) }}

select
    v.vehicle_class,
    cast(date_trunc('week', f.activity_date) as date)                   as week_starting,
    sum(f.km_driven)                                                    as km_driven,
    sum(f.fuel_litres)                                                  as fuel_litres,
    round(sum(f.km_driven) / nullif(sum(f.fuel_litres), 0), 2)          as km_per_litre
from {{ ref('fct_vehicle_daily') }} as f
join {{ ref('dim_vehicles') }} as v using (vehicle_id)
group by 1, 2
