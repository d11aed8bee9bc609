select count(*) as n from {{ ref('zz_inc') }} having count(*) <> {{ var('fox_rows', 3) }}
