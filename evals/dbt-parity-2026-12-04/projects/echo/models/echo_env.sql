select
  '{{ env_var("BLIND_LEAK", "clean") }}' as blind_leak,
  '{{ env_var("BLIND_LATE", "clean") }}' as blind_late,
  '{{ env_var("VARY_TAG", "clean") }}' as vary_tag,
  '{{ env_var("VARY_REQUIRED", "clean") }}' as vary_required,
  '{{ env_var("HOOK_OK", "clean") }}' as hook_ok,
  '{{ var("color", "clean") }}' as color_var,
  '{{ var("expect", "clean") }}' as expect_var
