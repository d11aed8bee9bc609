select 5 as id, 'macros' as owner
