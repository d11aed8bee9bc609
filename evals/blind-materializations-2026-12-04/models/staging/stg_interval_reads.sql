-- The head-end's hourly reads as delivered, typed and dated. A view: always the whole feed.
select
    read_id,
    meter_id,
    read_at,
    cast(read_at as date) as read_date,
    kwh,
    quality,
    firmware_version,
    received_at
from {{ source('ami', 'interval_reads') }}
