select phase, count(*) as n from {{ target.schema }}.hook_log group by phase
