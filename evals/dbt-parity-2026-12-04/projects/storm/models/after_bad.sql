select * from {{ ref('a_bad_sql') }}
