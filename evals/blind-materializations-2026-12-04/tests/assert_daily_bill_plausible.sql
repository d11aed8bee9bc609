-- No meter-day bill is negative or above 50 pounds (the largest business meter on the
-- network uses about 40 kWh a day).
select meter_id, bill_date, kwh, total_charge
from {{ ref('fct_daily_bills') }}
where total_charge < 0 or total_charge > 50
