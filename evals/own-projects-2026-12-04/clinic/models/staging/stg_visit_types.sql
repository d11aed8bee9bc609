select visit_type_code, visit_type_name, default_minutes
from {{ ref('visit_types') }}
