select
    s.product_id,
    p.product_name,
    p.category,
    sum(s.units_sold) as units_sold,
    cast(sum(s.revenue) as decimal(14, 2)) as revenue,
    cast(sum(s.revenue - s.cost) as decimal(14, 2)) as margin
from {{ ref('int_product_sales_daily') }} as s
join {{ ref('dim_products') }} as p using (product_id)
group by 1, 2, 3
