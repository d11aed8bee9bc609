{{ config(tags=['sla']) }}

select
    s.shipment_id,
    s.vehicle_id,
    s.driver_id,
    dr.driver_name,
    s.depot_id,
    dp.depot_code,
    s.promised_at,
    s.promised_on,
    s.delivered_at,
    s.status,
    s.weight_kg,
    l.minutes_late,
    l.is_on_time
from {{ ref('stg_shipments') }} as s
join {{ ref('int_shipment_lateness') }} as l using (shipment_id)
left join {{ ref('stg_drivers') }} as dr using (driver_id)
left join {{ ref('stg_depots') }} as dp on dp.depot_id = s.depot_id
