-- depends_on: {{ ref('echo_people') }}
-- depends_on: {{ ref('echo_a') }}
-- depends_on: {{ ref('echo_env') }}
-- depends_on: {{ ref('echo_cwd') }}
-- the only tables in this project's w.duckdb must be the ones this project builds
select table_schema, table_name
from information_schema.tables
where table_catalog = current_database()
  and table_name not in ('echo_people', 'echo_a', 'echo_env', 'echo_cwd')
