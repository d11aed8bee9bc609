select count(*) from hook_marker having count(*) <> 1
