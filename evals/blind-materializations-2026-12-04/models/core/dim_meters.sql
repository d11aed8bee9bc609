-- The meter register as it stands now: the current version of each meter in the snapshot.
select
    meter_id,
    premise_id,
    region,
    tariff_code,
    meter_type,
    installed_on
from {{ ref('meters_snapshot') }}
where dbt_valid_to is null
