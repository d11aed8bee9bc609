{{ config(materialized='incremental') }}
{% if is_incremental() %}
-- second and later runs append 2 rows
select range + 100 as i, 'fox' as who from range(2)
{% else %}
-- first (or full-refresh) build: 3 rows
select range as i, 'fox' as who from range(3)
{% endif %}
