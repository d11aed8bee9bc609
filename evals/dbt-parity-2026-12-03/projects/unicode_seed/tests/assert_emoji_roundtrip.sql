select * from {{ ref('people_clean') }} where id = 3 and display_name <> '—'
