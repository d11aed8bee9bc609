select
    acct_key,
    trim(account_name) as account_name,
    upper(region) as region,
    segment,
    created_at
from {{ source('crm', 'accounts') }}
where account_name is not null
