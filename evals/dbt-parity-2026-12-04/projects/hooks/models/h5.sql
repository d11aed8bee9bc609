select 5 as n, 'hooks' as owner
