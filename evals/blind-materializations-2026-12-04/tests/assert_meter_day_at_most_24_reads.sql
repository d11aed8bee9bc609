-- Reads are hourly and stamped in UTC: a meter-day holds at most 24 of them.
select meter_id, read_date, reads
from {{ ref('agg_meter_read_quality') }}
where reads > 24
