select
    p.promo_code,
    p.campaign,
    count(o.order_id) as orders,
    cast(sum(o.discount_amount) as decimal(14, 2)) as discount_total,
    cast(sum(o.net_amount) as decimal(14, 2)) as net_revenue
from {{ ref('dim_promotions') }} as p
left join {{ ref('fct_orders') }} as o on o.promo_code = p.promo_code
group by 1, 2
