{% macro detach_side() %}
  {% do run_query("detach database if exists side") %}
  {% do log("side detached (if it was attached)", info=True) %}
{% endmacro %}
