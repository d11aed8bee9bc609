-- The estimated charge of each meter for each day: energy at the tariff's rate plus the
-- tariff's standing charge.
with daily as (
    select
        meter_id,
        read_date,
        sum(kwh) as kwh,
        count(*) as reads
    from {{ ref('fct_interval_reads') }}
    group by meter_id, read_date
)

select
    d.meter_id,
    d.read_date as bill_date,
    p.region,
    p.tariff_code,
    p.customer_class,
    d.kwh,
    d.reads,
    round(d.kwh * p.rate_per_kwh, 2) as energy_charge,
    p.standing_charge_day as standing_charge,
    round(d.kwh * p.rate_per_kwh, 2) + p.standing_charge_day as total_charge
from daily as d
inner join {{ ref('int_meter_tariffs') }} as p
    on p.meter_id = d.meter_id
