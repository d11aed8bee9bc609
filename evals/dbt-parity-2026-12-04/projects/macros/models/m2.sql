select 2 as id, 'macros' as owner
