select * from {{ ref('bad') }}
