{% macro fail_loudly(msg) %}
  {{ exceptions.raise_compiler_error("blind-compiler-error: " ~ msg) }}
{% endmacro %}
