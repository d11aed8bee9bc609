{% if execute %}
  {{ fail_loudly("raised while compiling bad") }}
{% endif %}
select id from {{ ref('good') }}
