{{ config(tags=['ops_report']) }}

-- Weekly on-time delivery per depot, as the ops morning report shows it (headers as displayed).
select
    depot_code                                                        as "DepotCode",
    cast(date_trunc('week', promised_on) as date)                     as "Week Starting",
    count(*)                                                          as "Deliveries",
    count(*) filter (where not is_on_time)                            as "Late Deliveries",
    round(100.0 * count(*) filter (where is_on_time) / count(*), 1)   as "On-Time %"
from {{ ref('fct_deliveries') }}
where status = 'delivered'
group by 1, 2
