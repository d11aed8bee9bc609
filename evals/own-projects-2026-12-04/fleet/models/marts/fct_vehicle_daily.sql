{{
  config(
    materialized='incremental',
    unique_key='vehicle_day_key',
    incremental_strategy='delete+insert',
    on_schema_change='append_new_columns',
    tags=['telematics']
  )
}}

with pings as (
    select * from {{ ref('int_ping_deltas') }}
    {% if is_incremental() %}
    -- re-process the last loaded day, in case late pings arrived for it
    where ping_date >= (select max(activity_date) from {{ this }})
    {% endif %}
),

driving as (
    select
        vehicle_id,
        ping_date                                         as activity_date,
        count(*)                                          as ping_count,
        round(sum(km_delta), 2)                           as km_driven,
        sum(case when engine_on then minutes_delta end)   as engine_minutes,
        sum(case when is_idle then minutes_delta end)     as idle_minutes
    from pings
    group by 1, 2
),

fuel as (
    select vehicle_id, fuelled_on, sum(litres) as fuel_litres, sum(cost_gbp) as fuel_cost_gbp
    from {{ ref('stg_fuel_events') }}
    group by 1, 2
)

select
    cast(driving.vehicle_id as varchar) || '-' || strftime(driving.activity_date, '%Y%m%d') as vehicle_day_key,
    driving.vehicle_id,
    driving.activity_date,
    driving.ping_count,
    driving.km_driven,
    coalesce(driving.engine_minutes, 0)  as engine_minutes,
    coalesce(driving.idle_minutes, 0)    as idle_minutes,
    coalesce(fuel.fuel_litres, 0)        as fuel_litres,
    coalesce(fuel.fuel_cost_gbp, 0)      as fuel_cost_gbp
from driving
left join fuel
    on fuel.vehicle_id = driving.vehicle_id
   and fuel.fuelled_on = driving.activity_date
