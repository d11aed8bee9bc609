select * from (values (1, 'a'), (2, null), (2, 'c')) as t(id, label)
