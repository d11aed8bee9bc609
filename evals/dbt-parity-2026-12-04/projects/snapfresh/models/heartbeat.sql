select 1 as id, now()::timestamp as loaded_at
