select n + 1 as m from {{ ref('broken') }}
