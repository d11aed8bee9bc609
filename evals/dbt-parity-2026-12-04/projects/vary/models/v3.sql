select 3 as n, '{{ var("color", "none") }}' as color from {{ ref('cfg') }}
