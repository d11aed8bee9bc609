select * from {{ ref('storm_only') }} where answer <> {{ var('storm_answer', 42) }}
