-- depends_on: {{ ref('slow_01') }}
-- depends_on: {{ ref('slow_02') }}
-- depends_on: {{ ref('slow_03') }}
-- depends_on: {{ ref('slow_04') }}
-- depends_on: {{ ref('a_boom') }}
select table_name, table_type from information_schema.tables
where table_catalog = current_database()
  and table_name in ('slow_01', 'slow_02', 'slow_03', 'slow_04', 'a_boom')
  and table_type <> 'VIEW'
