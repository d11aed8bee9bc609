select 3 as id, 'macros' as owner
