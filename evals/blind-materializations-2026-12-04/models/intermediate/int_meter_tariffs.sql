-- Each meter with the price of its tariff. Ephemeral: inlined as a CTE where it is used.
select
    m.meter_id,
    m.region,
    m.tariff_code,
    t.customer_class,
    t.rate_per_kwh,
    t.standing_charge_day
from {{ ref('dim_meters') }} as m
inner join {{ ref('stg_tariffs') }} as t
    on t.tariff_code = m.tariff_code
