-- Read completeness per meter and day, over the whole feed as delivered (rebuilt every run).
select
    meter_id,
    read_date,
    count(*) as reads,
    count(*) filter (where quality = 'A') as actual_reads,
    count(*) filter (where quality = 'E') as estimated_reads,
    count(*) filter (where quality = 'X') as failed_reads,
    count(*) filter (where kwh is null) as reads_without_value
from {{ ref('stg_interval_reads') }}
group by meter_id, read_date
