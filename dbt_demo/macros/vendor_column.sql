{#-
  Vendor feeds change shape without notice. Staging looks each vendor column up in the live
  relation and, when it is absent, emits a typed NULL instead of failing the build. This is how
  real vendor-feed staging is often written, and it is why a vendor rename is silent: every job
  stays green while the column downstream goes empty.
-#}
{% macro vendor_column(relation, column_name, data_type, alias=none) -%}
  {%- set out = alias or column_name -%}
  {%- if execute -%}
    {%- set present = adapter.get_columns_in_relation(relation) | map(attribute='name') | map('lower') | list -%}
  {%- else -%}
    {%- set present = [column_name | lower] -%}
  {%- endif -%}
  {%- if column_name | lower in present -%}
    cast({{ adapter.quote(column_name) }} as {{ data_type }}) as {{ out }}
  {%- else -%}
    cast(null as {{ data_type }}) as {{ out }}
  {%- endif -%}
{%- endmacro %}
