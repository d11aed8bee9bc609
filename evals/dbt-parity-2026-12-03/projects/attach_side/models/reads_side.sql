{{ config(
    materialized='table',
    pre_hook=[before_begin("attach if not exists 'side.duckdb' as side")]
) }}
-- depends_on: {{ ref('exported') }}
select count(*) as n, sum(v) as total from side.main.exported_copy
