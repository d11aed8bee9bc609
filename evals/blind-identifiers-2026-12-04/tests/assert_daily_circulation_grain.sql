-- agg_daily_circulation has one row per checkout day and lending branch.
select "date", "from", count(*) as n
from {{ ref('agg_daily_circulation') }}
group by "date", "from"
having count(*) > 1
