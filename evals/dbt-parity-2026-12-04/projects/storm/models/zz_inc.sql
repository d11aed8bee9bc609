{{ config(materialized='incremental') }}
select range as i, range * 2 as doubled from range(10)
{% if is_incremental() %} where range > (select max(i) from {{ this }}) {% endif %}
