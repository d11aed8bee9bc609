select 4 as id, 'macros' as owner
