{% snapshot meters_snapshot %}
{{
    config(
        schema='snapshots',
        unique_key='meter_id',
        strategy='check',
        check_cols=['premise_id', 'region', 'tariff_code', 'meter_type'],
    )
}}
select
    meter_id,
    premise_id,
    region,
    tariff_code,
    meter_type,
    installed_on
from {{ source('crm', 'meters') }}
{% endsnapshot %}
