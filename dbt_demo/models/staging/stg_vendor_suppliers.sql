{%- set feed = source('vendor', 'suppliers') -%}
select
    supplier_id,
    {{ vendor_column(feed, 'supplier_name', 'varchar') }},
    {{ vendor_column(feed, 'country', 'varchar', 'supplier_country') }},
    {{ vendor_column(feed, 'lead_time_days', 'integer') }}
from {{ feed }}
