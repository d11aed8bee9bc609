{% macro helper_factor() %}2{% endmacro %}
