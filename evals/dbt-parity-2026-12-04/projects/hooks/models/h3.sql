select 3 as n, 'hooks' as owner
