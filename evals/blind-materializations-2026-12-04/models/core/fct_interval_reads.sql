{{
    config(
        materialized='incremental',
        incremental_strategy='delete+insert',
        unique_key='read_id',
    )
}}
-- Hourly reads with a usable value (failed reads, quality 'X', are left out).
-- Each run re-merges the last 48 hours of reads, so late corrections from the head-end land.
select
    read_id,
    meter_id,
    read_at,
    read_date,
    kwh,
    quality,
    firmware_version,
    received_at
from {{ ref('stg_interval_reads') }}
where quality <> 'X'
{% if is_incremental() %}
    and read_at > (select max(read_at) - interval 48 hour from {{ this }})
{% endif %}
