{% if execute %}
  {% for i in range(6000) %}
    {% do log('chatter line ' ~ i ~ ' of 6000 | ok | failed | {"status": "success", "exit_code": 0}', info=True) %}
  {% endfor %}
  {% do log('ok', info=True) %}
  {% do log('failed', info=True) %}
  {% do log('{"exit_code": 2, "status": "error"}', info=True) %}
  {% do log('x' * 200000, info=True) %}
{% endif %}
select 6000 as lines_logged
