select 1 as id, 'macros' as owner
