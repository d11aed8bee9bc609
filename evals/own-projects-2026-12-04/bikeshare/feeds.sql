-- Raw feeds for the bikeshare project, loaded into the warehouse before dbt runs.
-- Deterministic: every value is arithmetic on a row number; every date lies in the 7 days
-- before "now" (getvariable('upstream_now'), pinned to 2026-11-29 06:00:00 UTC).
--
-- Name traps, on purpose:
--   dock.trip_log_v3    is the dbt source dock.trips        (identifier differs from name)
--   billing.pmt_feed_raw is the dbt source billing.payments (identifier differs from name)
--   crm.members_v2      is the dbt source crm.members       (identifier differs from name)
--   crm.members         is a LEGACY export that no dbt node reads. It has the same columns as
--                       crm.members_v2 but different, clean rows (ids 5001-5080). Reading the
--                       source crm.members by its DataHub name silently reads this table.
--   dock.stations       is the dbt source dock.stations (name = identifier; the control)

CREATE SCHEMA IF NOT EXISTS dock;
CREATE SCHEMA IF NOT EXISTS billing;
CREATE SCHEMA IF NOT EXISTS crm;

-- 120 members; member i joined at now - 167h + i*80min (the last at now - 7h).
CREATE OR REPLACE TABLE crm.members_v2 AS
SELECT
    i::INTEGER                                                   AS member_id,
    'M' || lpad(i::VARCHAR, 5, '0')                              AS member_code,
    CASE WHEN i % 10 IN (0, 1, 2) THEN 'annual'
         WHEN i % 10 IN (3, 4, 5, 6, 7) THEN 'monthly'
         ELSE 'day_pass' END                                     AS plan,
    CASE i % 4 WHEN 0 THEN 'Harbour' WHEN 1 THEN 'Old Town'
               WHEN 2 THEN 'Riverside' ELSE 'University' END     AS home_district,
    'member' || i::VARCHAR || '@example.org'                     AS email,
    getvariable('upstream_now')::TIMESTAMP
        - INTERVAL 167 HOUR + to_minutes((i * 80)::BIGINT)       AS joined_at
FROM range(1, 121) AS r(i);

-- The legacy export: same columns, different and clean rows, read by nothing in dbt.
CREATE OR REPLACE TABLE crm.members AS
SELECT
    (5000 + i)::INTEGER                                          AS member_id,
    'L' || lpad(i::VARCHAR, 5, '0')                              AS member_code,
    CASE WHEN i % 2 = 0 THEN 'annual' ELSE 'monthly' END         AS plan,
    CASE i % 2 WHEN 0 THEN 'Harbour' ELSE 'Old Town' END         AS home_district,
    'legacy' || i::VARCHAR || '@example.org'                     AS email,
    getvariable('upstream_now')::TIMESTAMP
        - INTERVAL 160 HOUR + to_minutes((i * 100)::BIGINT)      AS joined_at
FROM range(1, 81) AS r(i);

-- 24 docking stations in four districts (six each).
CREATE OR REPLACE TABLE dock.stations AS
SELECT
    (100 + i)::INTEGER                                           AS station_id,
    'Station ' || (100 + i)::VARCHAR                             AS station_name,
    CASE i % 4 WHEN 0 THEN 'Harbour' WHEN 1 THEN 'Old Town'
               WHEN 2 THEN 'Riverside' ELSE 'University' END     AS district,
    (10 + i % 15)::INTEGER                                       AS capacity
FROM range(1, 25) AS r(i);

-- 420 trips; trip t starts at now - 166h + t*23min (the last at now - 5h), by a member who
-- had already joined.
CREATE OR REPLACE TABLE dock.trip_log_v3 AS
SELECT
    (10000 + t)::INTEGER                                         AS trip_id,
    (1 + (t * 37) % ((t * 23 + 60) // 80))::INTEGER              AS member_id,
    (101 + (t * 7) % 24)::INTEGER                                AS start_station_id,
    (101 + (t * 11) % 24)::INTEGER                               AS end_station_id,
    getvariable('upstream_now')::TIMESTAMP
        - INTERVAL 166 HOUR + to_minutes((t * 23)::BIGINT)       AS started_at,
    getvariable('upstream_now')::TIMESTAMP
        - INTERVAL 166 HOUR + to_minutes((t * 23 + 5 + t % 40)::BIGINT) AS ended_at,
    (150 + (t % 20) * 25 + CASE WHEN t % 3 = 0 THEN 100 ELSE 0 END)::INTEGER AS fare_cents,
    CASE WHEN t % 3 = 0 THEN 'electric' ELSE 'classic' END       AS bike_type,
    getvariable('upstream_now')::TIMESTAMP
        - INTERVAL 166 HOUR + to_minutes((t * 23 + 50)::BIGINT)  AS _loaded_at
FROM range(1, 421) AS r(t);

-- One payment per trip, except every 13th trip (unpaid). "PaymentMethod" is mixed-case on
-- purpose: DuckDB keeps the case, dbt must quote it.
CREATE OR REPLACE TABLE billing.pmt_feed_raw AS
SELECT
    (70000 + t)::INTEGER                                         AS payment_id,
    (10000 + t)::INTEGER                                         AS trip_id,
    (150 + (t % 20) * 25 + CASE WHEN t % 3 = 0 THEN 100 ELSE 0 END
         - CASE WHEN t % 5 = 4 THEN 50 ELSE 0 END)::INTEGER      AS amount_cents,
    CASE WHEN t % 5 IN (0, 1) THEN 'card'
         WHEN t % 5 IN (2, 3) THEN 'wallet'
         ELSE 'voucher' END                                      AS "PaymentMethod",
    getvariable('upstream_now')::TIMESTAMP
        - INTERVAL 166 HOUR + to_minutes((t * 23 + 50 + t % 40)::BIGINT) AS paid_at
FROM range(1, 421) AS r(t)
WHERE t % 13 <> 0;
