select 1 as problem where (select count(*) from {{ ref('ok_model') }}) = 0
