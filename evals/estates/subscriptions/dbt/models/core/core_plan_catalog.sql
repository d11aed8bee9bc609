-- The price list in USD at the latest rate: no date column of its own.
with latest as (
    select currency, usd_rate
    from {{ source('fx', 'rates') }}
    qualify row_number() over (partition by currency order by rate_date desc) = 1
)
select
    p.plan_code,
    p.plan_name,
    p.monthly_price,
    lower(p.currency) as currency,
    cast(p.monthly_price * latest.usd_rate as decimal(12, 2)) as monthly_price_usd
from {{ source('billing', 'plans') }} as p
join latest on latest.currency = lower(p.currency)
