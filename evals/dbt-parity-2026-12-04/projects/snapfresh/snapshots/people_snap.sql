{% snapshot people_snap %}
{{ config(target_schema='main', unique_key='id', strategy='timestamp', updated_at='updated_at') }}
select id, name, updated_at from {{ ref('people') }}
{% endsnapshot %}
