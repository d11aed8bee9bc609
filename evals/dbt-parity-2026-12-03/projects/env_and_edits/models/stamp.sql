select '{{ env_var("BLIND_REQUIRED") }}' as stamp, {{ var("multiplier", 1) }} as mult
