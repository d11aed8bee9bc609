{{ config(tags=['board_pack']) }}

select
    provider_id,
    specialty_code,
    cast(date_trunc('month', scheduled_on) as date)                             as appointment_month,
    count(*) filter (where was_due)                                            as appointments_due,
    count(*) filter (where is_no_show)                                         as no_shows,
    round(count(*) filter (where is_no_show) / nullif(count(*) filter (where was_due), 0), 4) as no_show_rate
from {{ ref('fct_appointments') }}
group by 1, 2, 3
