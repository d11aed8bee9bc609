select x + 1 as y from {{ ref('a_boom') }}
