{{ config(enabled=var('with_extra', false)) }}
select 'only built when --vars with_extra: true' as why
