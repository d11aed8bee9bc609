select 6 as n, 'hooks' as owner
