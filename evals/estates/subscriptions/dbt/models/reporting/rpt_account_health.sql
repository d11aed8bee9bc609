select * from {{ ref('core_account_health') }}
where health_score is not null
