select * from {{ ref('echo_env') }}
where blind_leak <> 'clean' or blind_late <> 'clean' or vary_tag <> 'clean'
   or vary_required <> 'clean' or hook_ok <> 'clean' or color_var <> 'clean' or expect_var <> 'clean'
