-- One row per loan, with the borrower's group and the copy's collection.
select
    l.loan_id,
    l."user",
    p."group",
    l."ItemBarcode",
    i."Collection",
    i."année",
    l."from",
    l."CheckoutTS",
    cast(l."CheckoutTS" as date) as "date",
    l."due-date",
    l."end",
    case
        when l."end" is not null
            then greatest(date_diff('day', l."due-date", cast(l."end" as date)), 0)
    end as days_late,
    l."late fee"
from {{ ref('stg_loans') }} as l
left join {{ ref('dim_patrons') }} as p
    on p."UserID" = l."user"
left join {{ ref('dim_items') }} as i
    on i."ItemBarcode" = l."ItemBarcode"
