with items as (
    select
        order_id,
        count(*) as item_count,
        sum(quantity) as units,
        cast(sum(line_amount) as decimal(12, 2)) as gross_amount,
        cast(sum(line_cost) as decimal(12, 2)) as cost_amount
    from {{ ref('int_order_items_enriched') }}
    group by order_id
)
select
    o.order_id,
    o.customer_id,
    o.order_ts,
    o.order_date,
    o.status,
    o.channel,
    o.promo_code,
    coalesce(items.item_count, 0) as item_count,
    coalesce(items.units, 0) as units,
    coalesce(items.gross_amount, 0) as gross_amount,
    coalesce(items.cost_amount, 0) as cost_amount,
    coalesce(d.order_discount, 0) as discount_amount,
    coalesce(items.gross_amount, 0) - coalesce(d.order_discount, 0) as net_amount
from {{ ref('stg_orders') }} as o
left join items using (order_id)
left join {{ ref('int_order_discounts') }} as d using (order_id)
