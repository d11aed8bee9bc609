select * from {{ ref('derived') }} where total <> {{ var('expected_total') }}
