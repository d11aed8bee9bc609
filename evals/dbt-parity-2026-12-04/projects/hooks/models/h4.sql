select 4 as n, 'hooks' as owner
