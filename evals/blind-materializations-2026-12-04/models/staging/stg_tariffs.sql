select
    tariff_code,
    tariff_name,
    customer_class,
    rate_per_kwh,
    standing_charge_day,
    currency
from {{ source('market', 'tariffs') }}
