select
    "ItemBarcode",
    title,
    "desc",
    "année",
    "unit price",
    "Collection",
    "Collection" = 'reference' as is_reference_only
from {{ ref('stg_items') }}
