-- One row per checkout day and lending branch.
select
    "date",
    "from",
    count(*) as loans,
    count(distinct "ItemBarcode") as "ItemCount",
    count(distinct "user") as "UserCount",
    sum("late fee") as "late fees"
from {{ ref('fct_loans') }}
group by "date", "from"
