{{ config(materialized='table') }}
select 'fox' as owner, 'no answer here' as remark
