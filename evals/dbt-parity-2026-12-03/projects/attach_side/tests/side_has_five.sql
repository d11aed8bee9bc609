select * from {{ ref('reads_side') }} where n <> 5 or total <> 100
