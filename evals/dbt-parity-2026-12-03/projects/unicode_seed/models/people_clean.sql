{% if execute %}
  {% do log("héllo ✓ 名前 — 🎉 building people_clean", info=True) %}
{% endif %}
-- ünïcødé comment: 清洁
select
    id,
    "naïve_名前" as display_name,
    "Größe (cm)" as height_cm,
    note,
    strpos(note, chr(10)) > 0 as note_has_newline
from {{ ref('people') }}
