-- reads no feed: a refresh after a fault on the feed leaves it alone
select cast(d as date) as day from range(date '2026-11-01', date '2026-12-01', interval 1 day) t(d)
