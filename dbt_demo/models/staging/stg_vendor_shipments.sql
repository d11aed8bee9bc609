{%- set feed = source('vendor', 'shipments') -%}
select
    shipment_id,
    order_id,
    {{ vendor_column(feed, 'carrier', 'varchar') }},
    {{ vendor_column(feed, 'shipped_ts', 'timestamp') }},
    {{ vendor_column(feed, 'delivered_ts', 'timestamp') }},
    {{ vendor_column(feed, 'shipping_cost', 'decimal(10, 2)') }}
from {{ feed }}
