select sum(c) as total from (
  select c from {{ ref('slow_01') }} union all select c from {{ ref('slow_02') }}
)
