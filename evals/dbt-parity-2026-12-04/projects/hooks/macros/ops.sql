{% macro explode(msg='hooks: explode was called') %}
  {{ exceptions.raise_compiler_error(msg) }}
{% endmacro %}

{% macro open_tx_then_fail() %}
  {# leaves an open, uncommitted transaction holding a table, then fails #}
  {% do run_query("begin transaction") %}
  {% do run_query("create table tx_ghost as select 'uncommitted' as state") %}
  {{ exceptions.raise_compiler_error("hooks: failed inside an open transaction") }}
{% endmacro %}

{% macro make_table(name, n) %}
  {% do run_query("create or replace table " ~ name ~ " as select range as i from range(" ~ n ~ ")") %}
  {{ log("made " ~ name, info=True) }}
{% endmacro %}
