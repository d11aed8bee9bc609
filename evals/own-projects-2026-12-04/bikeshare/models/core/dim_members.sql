{{ config(alias='member_directory') }}
-- dbt node dim_members; warehouse table and DataHub dataset: main_core.member_directory
select
    member_id,
    member_code,
    plan,
    home_district,
    plan = 'annual' as is_annual,
    joined_at
from {{ ref('stg_members') }}
