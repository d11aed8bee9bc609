-- Card holders as the ILS exports them. The source table is named "user", a reserved word.
select
    "UserID",
    "group",
    "home branch",
    "date",
    lower(email) as email
from {{ source('ils', 'user') }}
