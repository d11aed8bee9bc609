{% macro half_done() %}
  {% do run_query("create schema if not exists macro_zone") %}
  {% do run_query("create or replace table macro_zone.half_done as select 1 as step") %}
  {{ deep_fail(3) }}
{% endmacro %}

{% macro deep_fail(n) %}
  {% if n <= 0 %}
    {{ exceptions.raise_compiler_error("macros: deep_fail hit bottom") }}
  {% else %}
    {{ deep_fail(n - 1) }}
  {% endif %}
{% endmacro %}

{% macro list_zone() %}
  {% set res = run_query("select table_name from information_schema.tables where table_schema = 'macro_zone' order by 1") %}
  {{ log("macro_zone tables: " ~ (res.columns[0].values() | join(",")), info=True) }}
{% endmacro %}
