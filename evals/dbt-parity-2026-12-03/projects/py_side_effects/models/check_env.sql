select '{{ env_var("BLIND_LEAK", "clean") }}' as leak_state
