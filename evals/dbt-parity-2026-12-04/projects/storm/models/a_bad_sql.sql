select * from main.table_that_does_not_exist_anywhere
