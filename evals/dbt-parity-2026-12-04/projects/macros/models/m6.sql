select 6 as id, 'macros' as owner
