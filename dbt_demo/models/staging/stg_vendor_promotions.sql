{%- set feed = source('vendor', 'promotions') -%}
select
    promo_code,
    {{ vendor_column(feed, 'campaign', 'varchar') }},
    {{ vendor_column(feed, 'discount_pct', 'decimal(5, 2)') }},
    {{ vendor_column(feed, 'start_date', 'date') }},
    {{ vendor_column(feed, 'end_date', 'date') }}
from {{ feed }}
