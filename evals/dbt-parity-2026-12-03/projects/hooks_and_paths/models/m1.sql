select 1 as a
