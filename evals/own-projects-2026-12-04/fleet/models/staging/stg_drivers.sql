select driver_id, driver_name, hired_on, licence_class
from {{ source('dispatch', 'drivers') }}
