select 'fox' as who
