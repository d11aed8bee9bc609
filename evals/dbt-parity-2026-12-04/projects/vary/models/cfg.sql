select
  '{{ var("color", "none") }}' as color,
  '{{ env_var("VARY_TAG", "untagged") }}' as tag,
  '{{ target.name }}' as target_name,
  '{{ target.schema }}' as target_schema
