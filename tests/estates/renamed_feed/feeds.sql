-- The card vendor lands its file under a table name of its own: the dbt project declares it as
-- source `vendor.card_payments` with `identifier: cp_drop_v2`. One column needs quoting.
CREATE SCHEMA IF NOT EXISTS landing;
CREATE OR REPLACE TABLE landing.cp_drop_v2 AS
SELECT
    i                                                   AS payment_id,
    100 + (i % 7)                                       AS merchant_id,
    getvariable('upstream_now')::TIMESTAMP - to_hours(i) AS paid_at,
    round(5 + (i * 37 % 400) / 4.0, 2)                  AS amount,
    ['visa', 'mc', 'amex'][1 + i % 3]                   AS "Card Type"
FROM range(1, 241) AS r(i);
