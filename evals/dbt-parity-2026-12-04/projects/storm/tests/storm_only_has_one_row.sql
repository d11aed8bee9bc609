select count(*) from {{ ref('storm_only') }} having count(*) <> 1
