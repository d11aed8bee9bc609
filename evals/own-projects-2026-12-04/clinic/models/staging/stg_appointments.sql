select
    appointment_id,
    patient_id,
    provider_id,
    -- the seed loads '01' as 1: restore the two-character code
    lpad(cast(visit_type_code as varchar), 2, '0')        as visit_type_code,
    scheduled_start,
    cast(scheduled_start as date)                         as scheduled_on,
    duration_minutes,
    replace(lower(trim(status)), ' ', '_')                as status,
    booked_on,
    cancelled_at
from {{ ref('appointments') }}
