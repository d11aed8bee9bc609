-- The raw feeds of a SaaS subscription business, generated in DuckDB from a fixed recipe:
-- the clock (getvariable('upstream_now')) decides every date, hash() every "random" value, so
-- a pinned clock gives the same tables every time. Loaded by the raw_feeds asset
-- (UPSTREAM_FEEDS names this file).
create schema if not exists crm;
create schema if not exists billing;
create schema if not exists product;
create schema if not exists fx;

create or replace table crm.accounts as
select
    n::INTEGER as acct_key,
    'Account ' || n as account_name,
    ['emea', 'amer', 'apac', 'latam'][1 + (hash(n, 'region') % 4)::BIGINT] as region,
    ['self-serve', 'mid-market', 'enterprise'][1 + (hash(n, 'segment') % 3)::BIGINT] as segment,
    getvariable('upstream_now')::TIMESTAMP - to_minutes((n * 2521 % 1000 + (600 - n) * 1440)::BIGINT) as created_at,
    getvariable('upstream_now')::TIMESTAMP - to_minutes((n * 2521 % 1000 + (600 - n) * 1440)::BIGINT) + INTERVAL 40 MINUTE as _loaded_at
from range(1, 601) as t(n);

create or replace table crm.contacts as
select
    'C' || lpad(n::VARCHAR, 5, '0') as contact_ref,
    (1 + n % 600)::INTEGER as acct_key,
    'person' || n || '@example.test' as email,
    ['admin', 'member', 'billing'][1 + (hash(n, 'role') % 3)::BIGINT] as role,
    n <= 600 as is_primary,
    getvariable('upstream_now')::TIMESTAMP - to_hours((hash(n, 'upd') % 2000)::BIGINT) as updated_at,
    getvariable('upstream_now')::TIMESTAMP - to_hours((hash(n, 'upd') % 2000)::BIGINT) + INTERVAL 1 HOUR as _loaded_at
from range(1, 2401) as t(n);

create or replace table billing.plans as
select * from (values
    ('starter', 'Starter', 29.00::DECIMAL(10, 2), 'USD'),
    ('team', 'Team', 79.00::DECIMAL(10, 2), 'EUR'),
    ('business', 'Business', 249.00::DECIMAL(10, 2), 'EUR'),
    ('scale', 'Scale', 899.00::DECIMAL(10, 2), 'GBP')
) as p(plan_code, plan_name, monthly_price, currency);

create or replace table billing.subscriptions as
select
    'S-' || a.acct_key as sub_ref,
    a.acct_key,
    ['starter', 'team', 'business', 'scale'][1 + (hash(a.acct_key, 'plan') % 4)::BIGINT] as plan_code,
    (1 + hash(a.acct_key, 'seats') % 40)::INTEGER as seats,
    a.created_at::DATE as started_on,
    case when hash(a.acct_key, 'churn') % 9 = 0 then a.created_at::DATE + 200 end as ended_on,
    case when hash(a.acct_key, 'churn') % 9 = 0 then 'cancelled' else 'active' end as status,
    a._loaded_at
from crm.accounts as a;

-- one invoice per subscription per 30 days of its life, the last 120 days
create or replace table billing.invoices as
with days as (
    select (getvariable('upstream_now')::TIMESTAMP - to_days(d))::DATE as day
    from range(0, 120) as t(d)
)
select
    (row_number() over (order by s.sub_ref, day))::INTEGER as inv_no,
    s.sub_ref,
    s.acct_key,
    day as issued_on,
    day + 14 as due_on,
    (s.seats * p.monthly_price * (0.9 + (hash(s.sub_ref, day) % 20) / 100))::DECIMAL(12, 2) as amount,
    lower(p.currency) as currency,
    day::TIMESTAMP + INTERVAL 3 HOUR as _loaded_at
from billing.subscriptions as s
join billing.plans as p using (plan_code)
join days on day >= s.started_on and (s.ended_on is null or day < s.ended_on)
    and (day - s.started_on) % 30 = 0
where day < getvariable('upstream_now')::DATE;

create or replace table billing.payments as
select
    'P-' || inv_no as pay_ref,
    inv_no,
    issued_on::TIMESTAMP + to_hours((6 + hash(inv_no, 'lag') % 400)::BIGINT) as paid_at,
    case when hash(inv_no, 'short') % 17 = 0 then amount * 0.5 else amount end::DECIMAL(12, 2) as amount_paid,
    ['card', 'transfer', 'direct_debit'][1 + (hash(inv_no, 'method') % 3)::BIGINT] as method,
    issued_on::TIMESTAMP + to_hours((7 + hash(inv_no, 'lag') % 400)::BIGINT) as _loaded_at
from billing.invoices
where hash(inv_no, 'unpaid') % 11 <> 0
  and issued_on::TIMESTAMP + to_hours((7 + hash(inv_no, 'lag') % 400)::BIGINT) < getvariable('upstream_now')::TIMESTAMP;

create or replace table product.events as
select
    n::BIGINT as event_ref,
    (1 + hash(n, 'acct') % 600)::INTEGER as acct_key,
    'C' || lpad((1 + hash(n, 'who') % 2400)::VARCHAR, 5, '0') as contact_ref,
    ['login', 'feature_use', 'feature_use', 'export', 'heartbeat'][1 + (hash(n, 'type') % 5)::BIGINT] as event_type,
    ['reports', 'alerts', 'api', 'dashboards', 'sso'][1 + (hash(n, 'feat') % 5)::BIGINT] as feature,
    getvariable('upstream_now')::TIMESTAMP - to_seconds((n * 97 % 5184000)::BIGINT) as occurred_at,
    (100 + hash(n, 'dur') % 5000)::INTEGER as duration_ms,
    getvariable('upstream_now')::TIMESTAMP - to_seconds((n * 97 % 5184000)::BIGINT) + INTERVAL 5 MINUTE as _loaded_at
from range(1, 60001) as t(n);

create or replace table fx.rates as
select
    (getvariable('upstream_now')::TIMESTAMP - to_days(d))::DATE as rate_date,
    c.currency,
    case c.currency when 'usd' then 1.0
        when 'eur' then 1.08 + ((hash(d, 'eur') % 40)::INTEGER - 20) / 1000
        else 1.27 + ((hash(d, 'gbp') % 40)::INTEGER - 20) / 1000 end as usd_rate,
    (getvariable('upstream_now')::TIMESTAMP - to_days(d))::DATE::TIMESTAMP + INTERVAL 1 HOUR as _loaded_at
from range(0, 150) as t(d), (values ('usd'), ('eur'), ('gbp')) as c(currency)
where (getvariable('upstream_now')::TIMESTAMP - to_days(d))::DATE::TIMESTAMP + INTERVAL 1 HOUR
    <= getvariable('upstream_now')::TIMESTAMP;
