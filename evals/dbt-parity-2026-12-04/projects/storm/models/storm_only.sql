select 'storm' as owner, 42 as answer
