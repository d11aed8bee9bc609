-- rendered in a fresh process this is always 'clean'
select '{{ env_var("BLIND_LEAK", "clean") }}' as leak, '{{ env_var("BLIND_LATE", "clean") }}' as late
