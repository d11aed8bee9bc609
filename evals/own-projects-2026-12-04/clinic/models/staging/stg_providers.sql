select
    provider_id,
    provider_name,
    specialty_code,
    site_code,
    is_active
from {{ ref('providers') }}
