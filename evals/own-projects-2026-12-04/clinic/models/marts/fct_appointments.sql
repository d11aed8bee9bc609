select
    o.appointment_id,
    o.patient_id,
    o.provider_id,
    pr.specialty_code,
    pr.site_code,
    o.visit_type_code,
    o.visit_type_name,
    o.scheduled_start,
    o.scheduled_on,
    o.duration_minutes,
    o.status,
    o.lead_time_days,
    o.is_no_show,
    o.was_due,
    {{ age_band('p.date_of_birth', 'o.scheduled_on') }} as patient_age_band
from {{ ref('int_appointment_outcomes') }} as o
left join {{ ref('stg_patients') }} as p using (patient_id)
left join {{ ref('stg_providers') }} as pr using (provider_id)
