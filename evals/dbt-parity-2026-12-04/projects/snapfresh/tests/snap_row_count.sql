-- the expected number of snapshot rows is passed in by the step
select count(*) as n from {{ ref('people_snap') }} having count(*) <> {{ var('snap_rows', 3) }}
