-- One row per patron group: the model is named Group (mixed case, a reserved word).
select
    "group",
    count(distinct "user") as "UserCount",
    count(*) as loans,
    count(distinct "ItemBarcode") as "ItemCount",
    sum("late fee") as "late fees"
from {{ ref('fct_loans') }}
group by "group"
