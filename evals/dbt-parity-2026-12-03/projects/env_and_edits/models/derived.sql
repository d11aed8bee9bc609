select stamp, mult * {{ helper_factor() }} as total from {{ ref('stamp') }}
