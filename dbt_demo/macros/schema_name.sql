{#- Models name their schema outright (staging, intermediate, marts), not target_custom. -#}
{% macro generate_schema_name(custom_schema_name, node) -%}
  {{ (custom_schema_name or target.schema) | trim }}
{%- endmacro %}
