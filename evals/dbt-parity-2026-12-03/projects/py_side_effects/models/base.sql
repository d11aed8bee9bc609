select 1 as id, 'x' as label
