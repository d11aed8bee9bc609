{#-
  The one clock. dbt's source freshness compares max(loaded_at) with current_timestamp();
  when UPSTREAM_CLOCK pins Upstream's clock, dbt reads the same instant so a pinned run is
  reproducible.
-#}
{% macro duckdb__current_timestamp() -%}
  {%- set pinned = env_var('UPSTREAM_CLOCK', '') -%}
  {%- if pinned -%}
    cast(cast('{{ pinned | replace("Z", "") }}' as timestamptz) as timestamp)
  {%- else -%}
    cast(now() as timestamp)
  {%- endif -%}
{%- endmacro %}

{% macro generate_schema_name(custom_schema_name, node) -%}
  {{ (custom_schema_name or target.schema) | trim }}
{%- endmacro %}
