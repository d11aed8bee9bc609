select * from {{ ref('people_clean') }} where id = 1 and not note_has_newline
