{% macro generate_schema_name(custom_schema_name, node) -%}
  macro_zone
{%- endmacro %}

{% macro generate_alias_name(custom_alias_name=none, node=none) -%}
  mx_{{ node.name }}
{%- endmacro %}
