select supplier_id, supplier_name, supplier_country, lead_time_days
from {{ ref('stg_vendor_suppliers') }}
