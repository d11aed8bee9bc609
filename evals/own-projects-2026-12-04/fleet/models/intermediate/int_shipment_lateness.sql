select
    shipment_id,
    status,
    promised_at,
    delivered_at,
    case
        when status = 'delivered' then date_diff('minute', promised_at, delivered_at)
    end as minutes_late,
    case
        when status <> 'delivered' then null
        when delivered_at <= promised_at + interval 15 minute then true
        else false
    end as is_on_time
from {{ ref('stg_shipments') }}
