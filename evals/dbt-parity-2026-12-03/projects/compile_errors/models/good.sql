select 1 as id
