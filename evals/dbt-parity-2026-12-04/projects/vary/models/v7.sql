select 7 as n, '{{ var("color", "none") }}' as color from {{ ref('cfg') }}
