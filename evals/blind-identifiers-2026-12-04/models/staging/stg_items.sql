-- Catalogue copies; the source table is "Items" (mixed case).
select
    "ItemBarcode",
    title,
    "desc",
    "année",
    "unit price",
    "Collection",
    catalogued_at
from {{ source('catalogue', 'Items') }}
