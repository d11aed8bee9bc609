{% if execute %}
  {{ exceptions.raise_compiler_error("storm: a_boom refuses to compile") }}
{% endif %}
select 1 as x
