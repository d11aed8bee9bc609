{{ config(enabled=(env_var('VARY_TAG', 'untagged') == 't1')) }}
select 'only built when VARY_TAG=t1' as why, {{ var('color', 'none') | length }} as color_len
