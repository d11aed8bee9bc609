select 1 as n, 'hooks' as owner
