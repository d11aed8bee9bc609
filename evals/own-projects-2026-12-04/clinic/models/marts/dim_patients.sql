select
    patient_id,
    mrn,
    {{ age_band('date_of_birth', "date '2026-11-30'") }} as age_band,
    sex,
    home_postcode,
    coalesce(insurance_plan, 'UNKNOWN') as insurance_plan,
    registered_on
from {{ ref('stg_patients') }}
