select 'fox' as who, 04 as n
