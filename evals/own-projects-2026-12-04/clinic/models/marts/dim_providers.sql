select
    provider_id,
    provider_name,
    specialty_code,
    case specialty_code
        when '001' then 'Family medicine'
        when '003' then 'Internal medicine'
        when '007' then 'Pediatrics'
        when '012' then 'Cardiology'
        when '040' then 'Physiotherapy'
    end as specialty_name,
    site_code,
    is_active
from {{ ref('stg_providers') }}
