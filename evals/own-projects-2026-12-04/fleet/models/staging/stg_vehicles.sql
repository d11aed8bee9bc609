select
    vehicle_id,
    plate,
    vehicle_class,
    depot_id,
    commissioned_on,
    lower(status) as status,
    tank_litres
from {{ source('dispatch', 'vehicles') }}
