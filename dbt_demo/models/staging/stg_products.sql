select
    product_id,
    sku,
    product_name,
    category,
    supplier_id,
    cast(unit_price as decimal(10, 2)) as unit_price,
    cast(unit_cost as decimal(10, 2)) as unit_cost
from {{ source('shop', 'products') }}
