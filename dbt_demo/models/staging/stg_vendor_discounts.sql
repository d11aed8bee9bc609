{%- set feed = source('vendor', 'discounts') -%}
select
    discount_id,
    order_id,
    promo_code,
    {{ vendor_column(feed, 'discount_amt', 'decimal(10, 2)') }},
    {{ vendor_column(feed, 'applied_at', 'timestamp') }}
from {{ feed }}
