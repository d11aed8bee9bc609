select
    "UserID",
    "group",
    "home branch",
    "date" as card_issued_on,
    "group" = 'youth' as is_minor
from {{ ref('stg_patrons') }}
