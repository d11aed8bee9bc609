select 'pyleak' as owner, 7 as n
