select 2 as n, 'hooks' as owner
