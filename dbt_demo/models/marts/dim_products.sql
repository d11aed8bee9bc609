select
    p.product_id,
    p.sku,
    p.product_name,
    p.category,
    p.unit_price,
    p.unit_cost,
    p.supplier_id,
    s.supplier_name
from {{ ref('stg_products') }} as p
left join {{ ref('stg_vendor_suppliers') }} as s using (supplier_id)
