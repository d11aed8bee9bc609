select 'fox' as who, 02 as n
