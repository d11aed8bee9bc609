select depot_id, depot_code, city, region
from {{ source('dispatch', 'depots') }}
