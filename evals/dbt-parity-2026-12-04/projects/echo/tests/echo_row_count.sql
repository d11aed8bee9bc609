select count(*) as n from {{ ref('echo_a') }} having count(*) <> 5
