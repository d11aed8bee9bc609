-- Energy delivered per region and day: what the grid operations board plots.
select
    m.region,
    r.read_date as load_date,
    count(distinct r.meter_id) as meters,
    count(*) as reads,
    sum(r.kwh) as total_kwh,
    max(r.kwh) as peak_hour_kwh
from {{ ref('fct_interval_reads') }} as r
inner join {{ ref('dim_meters') }} as m
    on m.meter_id = r.meter_id
group by m.region, r.read_date
