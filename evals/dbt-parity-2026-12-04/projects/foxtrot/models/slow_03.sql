select 'fox' as who, 03 as n
