select * from {{ ref('cfg') }} where tag <> '{{ var("expect_tag", "untagged") }}'
