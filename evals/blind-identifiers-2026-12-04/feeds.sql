-- Raw feeds of the "biblio" project (a city library network), loaded before dbt runs.
-- Deterministic: every value is arithmetic on a row number; "now" is
-- getvariable('upstream_now'), pinned to 2026-11-29 06:00:00 UTC in every run that matters.
--
-- Identifier traps, on purpose (each is quoted exactly as the source system spells it):
--   ils."user"            a TABLE named by a reserved word (the ILS's patron table)
--     "UserID"            mixed case: the patron key
--     "group"             reserved word: the patron category
--     "home branch"       a space, and a non-ASCII value ('Notre-Dame-de-Grâce')
--     "date"              a type name used as a column: the day the card was issued
--   ils.loans
--     "user"              reserved word, the patron who borrowed (DuckDB binds an unquoted
--                         `user` to this column here, but to the whole row in ils."user")
--     "ItemBarcode"       mixed case: the copy lent
--     "from"              reserved word: the branch that lent it
--     "CheckoutTS"        mixed case: the first timestamp, the source's loaded_at_field
--     "due-date"          a dash: unquoted it reads `due - date`
--     "end"               reserved word: when it came back (NULL while out)
--     "late fee"          a space: unquoted it reads `late AS fee`
--   catalogue."Items"     a TABLE with a mixed-case name
--     "ItemBarcode"       mixed case: the key
--     "desc"              reserved word: the catalogue note
--     "année"             non-ASCII: year of publication
--     "unit price"        a space: the acquisition cost
--     "Collection"        mixed case: adult / youth / reference

CREATE SCHEMA IF NOT EXISTS ils;
CREATE SCHEMA IF NOT EXISTS catalogue;

-- 240 card holders. Patron i's card was issued i*11 days before today.
CREATE OR REPLACE TABLE ils."user" AS
SELECT
    i::INTEGER                                                        AS "UserID",
    CASE WHEN i % 12 <= 6 THEN 'adult'
         WHEN i % 12 IN (7, 8) THEN 'youth'
         WHEN i % 12 IN (9, 10) THEN 'senior'
         ELSE 'staff' END                                             AS "group",
    CASE i % 4 WHEN 0 THEN 'Centrale'
               WHEN 1 THEN 'Notre-Dame-de-Grâce'
               WHEN 2 THEN 'Plateau-Mont-Royal'
               ELSE 'Verdun' END                                      AS "home branch",
    (getvariable('upstream_now')::TIMESTAMP::DATE - to_days((i * 11)::INTEGER))::DATE AS "date",
    'lecteur' || i::VARCHAR || '@biblio.example'                      AS email
FROM range(1, 241) AS r(i);

-- 360 copies. Copy i was catalogued (721 - 2i) days ago: the last one yesterday.
CREATE OR REPLACE TABLE catalogue."Items" AS
SELECT
    '31234000' || lpad(i::VARCHAR, 6, '0')                            AS "ItemBarcode",
    'Titre ' || i::VARCHAR                                            AS title,
    'Notice catalographique ' || i::VARCHAR                           AS "desc",
    (1960 + (i * 7) % 65)::INTEGER                                    AS "année",
    (9.95 + (i * 13) % 45)::DECIMAL(8, 2)                             AS "unit price",
    CASE WHEN i % 6 <= 2 THEN 'adult'
         WHEN i % 6 IN (3, 4) THEN 'youth'
         ELSE 'reference' END                                         AS "Collection",
    getvariable('upstream_now')::TIMESTAMP
        - to_days((721 - 2 * i)::INTEGER)                             AS catalogued_at
FROM range(1, 361) AS r(i);

-- 900 loans over the last 60 days: loan n checked out at now - 60 d + 95 n min (the last at
-- now - 15 h), due 21 days later, back after 1 to 30 days (NULL while still out). The fee is
-- 0.25 a day late, capped at 10.00.
CREATE OR REPLACE TABLE ils.loans AS
WITH base AS (
    SELECT
        n,
        getvariable('upstream_now')::TIMESTAMP - INTERVAL 60 DAY
            + to_minutes((n * 95)::BIGINT)                            AS checkout_ts,
        1 + (n * 7) % 30                                              AS days_out
    FROM range(1, 901) AS r(n)
), shaped AS (
    SELECT
        n,
        checkout_ts,
        (checkout_ts + INTERVAL 21 DAY)::DATE                         AS due_date,
        CASE WHEN checkout_ts + to_days(days_out::INTEGER) + to_hours((n % 9)::BIGINT)
                  < getvariable('upstream_now')::TIMESTAMP
             THEN checkout_ts + to_days(days_out::INTEGER) + to_hours((n % 9)::BIGINT)
        END                                                           AS returned_ts
    FROM base
)
SELECT
    (700000 + n)::INTEGER                                             AS loan_id,
    (1 + (n * 37) % 240)::INTEGER                                     AS "user",
    '31234000' || lpad((1 + (n * 53) % 360)::VARCHAR, 6, '0')         AS "ItemBarcode",
    CASE n % 4 WHEN 0 THEN 'CEN' WHEN 1 THEN 'NDG'
               WHEN 2 THEN 'PMR' ELSE 'VER' END                       AS "from",
    checkout_ts                                                       AS "CheckoutTS",
    due_date                                                          AS "due-date",
    returned_ts                                                       AS "end",
    CASE WHEN returned_ts IS NOT NULL AND returned_ts::DATE > due_date
         THEN least(0.25 * (returned_ts::DATE - due_date), 10.00)
         ELSE 0 END::DECIMAL(6, 2)                                    AS "late fee"
FROM shaped;
