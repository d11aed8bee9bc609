select
    o.order_id,
    o.customer_id,
    o.order_ts,
    o.order_date,
    o.status,
    o.channel,
    o.promo_code,
    o.item_count,
    o.units,
    o.gross_amount,
    o.discount_amount,
    o.net_amount,
    o.cost_amount,
    coalesce(p.amount_paid, 0) as amount_paid,
    p.payment_method,
    coalesce(r.refund_amount, 0) as refund_amount
from {{ ref('int_orders_enriched') }} as o
left join {{ ref('int_payments_by_order') }} as p using (order_id)
left join {{ ref('int_returns_by_order') }} as r using (order_id)
