{%- set feed = source('vendor', 'inventory') -%}
select
    snapshot_date,
    product_id,
    {{ vendor_column(feed, 'on_hand_qty', 'integer') }},
    {{ vendor_column(feed, 'reorder_point', 'integer') }}
from {{ feed }}
