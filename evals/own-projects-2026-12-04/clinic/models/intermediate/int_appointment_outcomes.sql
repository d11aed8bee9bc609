select
    a.appointment_id,
    a.patient_id,
    a.provider_id,
    a.visit_type_code,
    v.visit_type_name,
    a.scheduled_start,
    a.scheduled_on,
    coalesce(a.duration_minutes, v.default_minutes)      as duration_minutes,
    a.status,
    a.booked_on,
    a.scheduled_on - a.booked_on                         as lead_time_days,
    a.status = 'no_show'                                 as is_no_show,
    a.status in ('completed', 'no_show')                 as was_due
from {{ ref('stg_appointments') }} as a
left join {{ ref('stg_visit_types') }} as v using (visit_type_code)
