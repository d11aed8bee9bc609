-- Raw feeds of the "meterdata" project (Northvale Power, a regional electricity distributor's
-- smart-meter analytics), loaded before dbt runs. Deterministic: every value is arithmetic on a
-- row number; "now" is getvariable('upstream_now'), pinned to 2026-11-29 06:00:00 UTC in every
-- run that matters. All timestamps are UTC.
--
--   ami.interval_reads   the head-end system's hourly reads, delivered in one nightly batch
--                        (received_at: the next day at about 01:00)
--   crm.meters           the customer system's meter register (snapshotted by dbt)
--   market.tariffs       the retail price file: one row per tariff

CREATE SCHEMA IF NOT EXISTS ami;
CREATE SCHEMA IF NOT EXISTS crm;
CREATE SCHEMA IF NOT EXISTS market;

-- 4 tariffs, prices in pounds.
CREATE OR REPLACE TABLE market.tariffs AS
SELECT * FROM (VALUES
    ('RES-STD',  'Residential standard',      'residential', 0.2450::DECIMAL(8, 4), 0.53::DECIMAL(6, 2)),
    ('RES-EV',   'Residential EV',            'residential', 0.2710::DECIMAL(8, 4), 0.53::DECIMAL(6, 2)),
    ('SME-FLAT', 'Small business flat',       'business',    0.2200::DECIMAL(8, 4), 1.20::DECIMAL(6, 2)),
    ('SME-TOU',  'Small business time-of-use', 'business',   0.2050::DECIMAL(8, 4), 1.45::DECIMAL(6, 2))
) AS t(tariff_code, tariff_name, customer_class, rate_per_kwh, standing_charge_day);
ALTER TABLE market.tariffs ADD COLUMN currency VARCHAR DEFAULT 'GBP';
ALTER TABLE market.tariffs ADD COLUMN valid_from DATE;
UPDATE market.tariffs SET valid_from = DATE '2026-10-01';

-- 30 meters. Region by i % 4, tariff by i % 5, firmware (in the reads) by i % 3.
CREATE OR REPLACE TABLE crm.meters AS
SELECT
    'MTR-' || lpad(i::VARCHAR, 4, '0')                                 AS meter_id,
    'PRM-' || (1000 + i * 7)::VARCHAR                                  AS premise_id,
    CASE i % 4 WHEN 0 THEN 'NORTH' WHEN 1 THEN 'SOUTH'
               WHEN 2 THEN 'EAST' ELSE 'WEST' END                      AS region,
    CASE i % 5 WHEN 0 THEN 'SME-TOU' WHEN 3 THEN 'RES-EV'
               WHEN 4 THEN 'SME-FLAT' ELSE 'RES-STD' END               AS tariff_code,
    CASE WHEN i % 5 IN (0, 4) THEN 'three-phase' ELSE 'single-phase' END AS meter_type,
    (getvariable('upstream_now')::TIMESTAMP::DATE - to_days((200 + i * 17)::INTEGER))::DATE
                                                                       AS installed_on,
    getvariable('upstream_now')::TIMESTAMP - to_days((10 + i)::INTEGER) AS updated_at
FROM range(1, 31) AS r(i);

-- 21,600 hourly reads: 30 meters x 30 complete days (2026-10-30 00:00 to 2026-11-28 23:00).
-- Residential load peaks 17:00-21:00, EV meters charge 01:00-04:00, business meters run
-- 08:00-18:00. About 1% of reads failed (quality 'X', kwh NULL); about 2.4% are estimated ('E').
CREATE OR REPLACE TABLE ami.interval_reads AS
WITH grid AS (
    SELECT
        i,
        n,
        n % 24                                                         AS h,
        date_trunc('day', getvariable('upstream_now')::TIMESTAMP) - INTERVAL 30 DAY
            + to_hours(n::BIGINT)                                      AS read_at
    FROM range(1, 31) AS m(i), range(0, 720) AS t(n)
), shaped AS (
    SELECT
        *,
        CASE WHEN (i * 31 + n) % 97 = 0 THEN 'X'
             WHEN (i * 13 + n) % 41 = 0 THEN 'E'
             ELSE 'A' END                                              AS quality,
        CASE WHEN i % 5 IN (0, 4)
             THEN CASE WHEN h BETWEEN 8 AND 18 THEN 2.00 + 0.15 * ((i + n) % 13) ELSE 0.40 END
             ELSE 0.20 + 0.05 * ((i * 7 + n * 3) % 11)
                  + CASE WHEN h BETWEEN 17 AND 21 THEN 0.60 ELSE 0 END
                  + CASE WHEN i % 5 = 3 AND h BETWEEN 1 AND 4 THEN 6.50 ELSE 0 END
        END                                                            AS load_kwh
    FROM grid
)
SELECT
    (5000000 + i * 1000 + n)::BIGINT                                   AS read_id,
    'MTR-' || lpad(i::VARCHAR, 4, '0')                                 AS meter_id,
    read_at,
    CASE WHEN quality = 'X' THEN NULL ELSE load_kwh END::DECIMAL(10, 3) AS kwh,
    quality,
    CASE WHEN i % 3 = 0 THEN 'v5.2' ELSE 'v4.1' END                    AS firmware_version,
    date_trunc('day', read_at) + INTERVAL 25 HOUR + to_minutes(i::BIGINT) AS received_at
FROM shaped;
