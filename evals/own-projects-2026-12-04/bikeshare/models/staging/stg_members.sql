select
    member_id,
    member_code,
    plan,
    home_district,
    joined_at
from {{ source('crm', 'members') }}
