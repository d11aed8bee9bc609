-- A late fee is 0.25 a day late and never more than 10.00: a bigger one is a unit error.
select loan_id, "late fee"
from {{ ref('fct_loans') }}
where "late fee" < 0 or "late fee" > 10
