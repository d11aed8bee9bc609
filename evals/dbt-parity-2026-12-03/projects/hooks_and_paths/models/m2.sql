select a + 1 as b from {{ ref('m1') }}
