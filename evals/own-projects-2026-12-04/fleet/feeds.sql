-- Raw feeds for the fleet project, as the telematics gateway and the dispatch system land them.
-- Deterministic: fixed dates (2026-11-22 .. 2026-11-28) and integer arithmetic only.
CREATE SCHEMA IF NOT EXISTS dispatch;
CREATE SCHEMA IF NOT EXISTS telemetry;

CREATE OR REPLACE TABLE dispatch.depots AS
SELECT * FROM (VALUES
    (1, 'LDN-N', 'London',     'South',    51.5900, -0.1000),
    (2, 'BHM-C', 'Birmingham', 'Midlands', 52.4800, -1.9000),
    (3, 'MAN-E', 'Manchester', 'North',    53.4800, -2.2000),
    (4, 'LDS-W', 'Leeds',      'North',    53.8000, -1.5500)
) AS t(depot_id, depot_code, city, region, depot_lat, depot_lon);

-- 12 vehicles; 112 was retired before the window and sends no pings.
CREATE OR REPLACE TABLE dispatch.vehicles AS
SELECT
    i                                                        AS vehicle_id,
    'FL' || lpad(CAST((i * 37) % 1000 AS VARCHAR), 3, '0') || ' ' ||
        chr(65 + CAST(i % 26 AS INTEGER)) || chr(65 + CAST((i * 7) % 26 AS INTEGER)) || 'X' AS plate,
    ['van', 'rigid', 'artic'][1 + CAST(i % 3 AS INTEGER)]    AS vehicle_class,
    1 + CAST(i % 4 AS INTEGER)                               AS depot_id,
    DATE '2021-01-04' + CAST((i - 101) * 45 AS INTEGER)      AS commissioned_on,
    CASE WHEN i = 112 THEN 'RETIRED' ELSE 'ACTIVE' END       AS status,
    CASE i % 3 WHEN 0 THEN 160 WHEN 1 THEN 300 ELSE 600 END  AS tank_litres
FROM range(101, 113) AS r(i);

CREATE OR REPLACE TABLE dispatch.drivers AS
SELECT
    i AS driver_id,
    ['Asha Patel', 'Ben Okafor', 'Carla Ruiz', 'Dev Sharma', 'Ewa Nowak',
     'Femi Adeyemi', 'Gus Larsen', 'Hana Sato', 'Ivan Petrov', 'Jo Walsh',
     'Kemal Arslan', 'Lena Vogel', 'Mo Haddad', 'Nia Evans', 'Omar Aziz'][i] AS driver_name,
    DATE '2019-03-01' + CAST(i * 97 AS INTEGER)                            AS hired_on,
    CASE WHEN i % 4 = 0 THEN 'C+E' WHEN i % 4 = 1 THEN 'C' ELSE 'C1' END  AS licence_class
FROM range(1, 16) AS r(i);

-- A ping every 10 minutes from 06:00 to 17:50 for the 11 active vehicles over 7 days.
CREATE OR REPLACE TABLE telemetry.gps_pings AS
WITH grid AS (
    SELECT v.i AS vehicle_id, d.i AS day_no, s.i AS slot
    FROM range(101, 112) AS v(i), range(0, 7) AS d(i), range(0, 72) AS s(i)
), raw AS (
    SELECT
        vehicle_id, day_no, slot,
        (slot % 12) < 10 AS engine_on,
        CASE
            WHEN (slot % 12) >= 10 THEN 0
            WHEN (vehicle_id + slot) % 7 = 0 THEN 0               -- idling at a drop
            ELSE 20 + (vehicle_id * 7 + slot * 13 + day_no * 5) % 60
        END AS speed
    FROM grid
)
SELECT
    vehicle_id * 100000 + day_no * 1000 + slot                         AS ping_id,
    vehicle_id,
    TIMESTAMP '2026-11-22 06:00:00'
        + to_days(CAST(day_no AS INTEGER)) + to_minutes(CAST(slot * 10 AS BIGINT)) AS ping_ts,
    round(d.depot_lat + 0.01 * sin(slot / 6.0 + vehicle_id), 5)        AS latitude,
    round(d.depot_lon + 0.01 * cos(slot / 6.0 + vehicle_id), 5)        AS longitude,
    -- GPS drop-outs: the gateway sends NULL speed now and then
    CASE WHEN (vehicle_id * 3 + slot * 7 + day_no) % 89 = 0 THEN NULL ELSE CAST(speed AS DOUBLE) END AS speed_kmh,
    round(10000 + (vehicle_id - 100) * 5000
        + SUM(speed * 10.0 / 60.0) OVER (PARTITION BY vehicle_id ORDER BY day_no, slot), 2) AS odometer_km,
    engine_on
FROM raw
JOIN dispatch.vehicles AS v USING (vehicle_id)
JOIN dispatch.depots AS d ON d.depot_id = v.depot_id;

-- Fuel card transactions, landed under the card vendor's own table name.
CREATE OR REPLACE TABLE telemetry.fuel_txn_raw AS
SELECT
    900000 + v.i * 10 + d.i                                              AS txn_id,
    'V' || CAST(v.i AS VARCHAR)                                          AS vehicle_ref,
    TIMESTAMP '2026-11-22 12:00:00' + to_days(CAST(d.i * 2 AS INTEGER))
        + to_minutes(CAST((v.i * 11) % 180 AS BIGINT))                   AS txn_ts,
    CAST(40 + (v.i * 13 + d.i * 7) % 90 AS DOUBLE)                       AS litres,
    CAST(1.40 + ((v.i + d.i) % 9) / 100.0 AS DECIMAL(6, 3))              AS price_per_litre,
    lpad(CAST((v.i * 29 + d.i * 3) % 700 AS VARCHAR), 5, '0')            AS station_code
FROM range(101, 112) AS v(i), range(0, 4) AS d(i);

-- 320 shipments over the week, status as the dispatch system spells it (upper case).
CREATE OR REPLACE TABLE dispatch.shipments AS
WITH s AS (
    SELECT
        i,
        101 + i % 11                        AS vehicle_id,
        1 + i % 15                          AS driver_id,
        i % 7                               AS day_no,
        (i * 37) % 480                      AS promised_offset_min
    FROM range(0, 320) AS r(i)
)
SELECT
    50001 + i                                                          AS shipment_id,
    vehicle_id,
    driver_id,
    1 + vehicle_id % 4                                                 AS depot_id,
    TIMESTAMP '2026-11-22 09:00:00' + to_days(CAST(day_no AS INTEGER))
        + to_minutes(CAST(promised_offset_min AS BIGINT))              AS promised_at,
    CASE
        WHEN i % 23 = 0 THEN 'FAILED'
        WHEN i % 31 = 0 THEN 'CANCELLED'
        WHEN day_no = 6 AND i % 3 = 0 THEN 'IN_TRANSIT'
        ELSE 'DELIVERED'
    END                                                                AS status,
    CASE
        WHEN i % 23 = 0 OR i % 31 = 0 OR (day_no = 6 AND i % 3 = 0) THEN NULL
        ELSE TIMESTAMP '2026-11-22 09:00:00' + to_days(CAST(day_no AS INTEGER))
            + to_minutes(CAST(promised_offset_min + (i * 53) % 150 - 90 AS BIGINT))
    END                                                                AS delivered_at,
    5 + ((i * 17) % 400) / 2.0                                         AS weight_kg
FROM s;
