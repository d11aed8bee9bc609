-- deliberately slow (~1s) so the 4 worker threads are busy when a sibling fails
select 09 as k, count(distinct md5(i::varchar)) as c from range(1500000) t(i)
