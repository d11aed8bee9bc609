select id, upper(name) as name_u from {{ ref('echo_people') }}
