select id, upper(name) as name from {{ ref('people') }}
