{% test not_null(model, column_name) %}
  {# project-level override of the builtin generic test: always fails #}
  select 'macros project overrides not_null' as why
{% endtest %}
