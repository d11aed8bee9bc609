-- One row per member who rode this week, with the plan the member directory gives them.
select
    f.member_id,
    m.plan,
    m.home_district,
    count(*) as trips,
    coalesce(sum(f.paid_cents), 0) as spend_cents
from {{ ref('fct_trips') }} as f
left join {{ ref('dim_members') }} as m
    on m.member_id = f.member_id
group by f.member_id, m.plan, m.home_district
