-- depends_on: {{ ref('slow_01') }}
-- depends_on: {{ ref('slow_02') }}
-- depends_on: {{ ref('slow_03') }}
-- depends_on: {{ ref('slow_04') }}
-- depends_on: {{ ref('a_boom') }}
-- depends_on: {{ ref('storm_only') }}
-- depends_on: {{ ref('zz_inc') }}
select table_schema, table_name, table_type
from information_schema.tables
where table_catalog = current_database()
  and table_name not in ('slow_01', 'slow_02', 'slow_03', 'slow_04', 'a_boom', 'storm_only', 'zz_inc')
