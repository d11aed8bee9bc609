{{ config(
    materialized='table',
    pre_hook=[before_begin("attach if not exists 'side.duckdb' as side")],
    post_hook=[after_commit("create or replace table side.main.exported_copy as select * from {{ this }}")]
) }}
select id, id * 10 as v from {{ ref('main_facts') }}
