select
    v.vehicle_id,
    v.plate,
    v.vehicle_class,
    v.status,
    v.commissioned_on,
    v.tank_litres,
    d.depot_id,
    d.depot_code,
    d.city   as depot_city,
    d.region as depot_region
from {{ ref('stg_vehicles') }} as v
left join {{ ref('stg_depots') }} as d using (depot_id)
