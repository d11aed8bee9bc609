select * from {{ ref('cfg') }} where color <> '{{ var("expect", "none") }}'
