select sub_ref, acct_key, plan_code, seats, started_on, ended_on, status
from {{ source('billing', 'subscriptions') }}
where status <> 'test'
