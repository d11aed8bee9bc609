select
    station_id,
    station_name,
    district,
    capacity,
    case when capacity >= 18 then 'large' else 'small' end as capacity_band
from {{ ref('stg_stations') }}
