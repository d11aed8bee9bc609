select
    station_id,
    station_name,
    district,
    capacity
from {{ source('dock', 'stations') }}
