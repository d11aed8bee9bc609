select
    patient_id,
    mrn,
    date_of_birth,
    upper(sex)        as sex,
    home_postcode,
    insurance_plan,
    registered_on
from {{ ref('patients') }}
