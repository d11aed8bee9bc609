select promo_code, campaign, discount_pct, start_date, end_date
from {{ ref('stg_vendor_promotions') }}
