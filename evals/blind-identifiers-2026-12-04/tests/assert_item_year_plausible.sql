-- No copy was published before printing or after this year.
select "ItemBarcode", "année"
from {{ ref('dim_items') }}
where "année" < 1450 or "année" > 2026
