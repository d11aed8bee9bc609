select 'fox' as who, 01 as n
