select cast('not a number' as integer) as n
