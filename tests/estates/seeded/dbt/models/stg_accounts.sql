select id as account_id, name as account_name, region, opened_on from {{ ref('raw_accounts') }}
