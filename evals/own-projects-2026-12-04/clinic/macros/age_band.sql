{#- Age band used on every patient-facing report. `dob` and `as_of` are SQL expressions. -#}
{% macro age_band(dob, as_of) -%}
    case
        when {{ dob }} is null then 'unknown'
        when date_part('year', age(cast({{ as_of }} as timestamp), cast({{ dob }} as timestamp))) < 18 then '0-17'
        when date_part('year', age(cast({{ as_of }} as timestamp), cast({{ dob }} as timestamp))) < 40 then '18-39'
        when date_part('year', age(cast({{ as_of }} as timestamp), cast({{ dob }} as timestamp))) < 65 then '40-64'
        else '65+'
    end
{%- endmacro %}
