with orders as (
    select order_date, count(*) as orders, cast(sum(net_amount) as decimal(14, 2)) as net_revenue
    from {{ ref('fct_orders') }}
    group by order_date
)
select
    s.session_date,
    sum(s.sessions) as sessions,
    sum(s.converted_sessions) as converted_sessions,
    max(o.orders) as orders,
    max(o.net_revenue) as net_revenue
from {{ ref('int_sessions_daily') }} as s
left join orders as o on o.order_date = s.session_date
group by 1
