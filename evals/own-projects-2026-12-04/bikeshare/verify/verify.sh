#!/bin/bash
# Check, WITHOUT Upstream, that the clean project builds green and that a plain-SQL rendering of
# each case's fault makes the check the case names fail (case 05's check only fails because the
# case marks it flaky, so here nothing fails: that is the point of it).
# Usage: verify/verify.sh [PYTHON] [DBT]   (defaults: /work/main/.venv/bin/{python,dbt})
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
PY=${1:-/work/main/.venv/bin/python}
DBT=${2:-/work/main/.venv/bin/dbt}
P=$HERE  # the project is this folder
W=/tmp/blind-renamed-2026-12-04/warehouse      # profiles.yml's DuckDB path lives here
mkdir -p "$W"
rm -f "$W/bikeshare.duckdb"
"$PY" "$HERE/verify/load_feeds.py" "$W/bikeshare.duckdb" "$P/feeds.sql"
echo "== clean build"
(cd "$P" && DBT_PROFILES_DIR=. "$DBT" build 2>&1 | sed 's/\x1b\[[0-9;]*m//g' | grep -E "Done\.")
cp "$W/bikeshare.duckdb" "$W/clean.duckdb"

sim() {  # NAME SQL [dbt args...]
  echo "== $1"
  "$PY" - "$W/bikeshare.duckdb" "$2" <<'PY'
import duckdb, sys
con = duckdb.connect(sys.argv[1])
con.execute("SET VARIABLE upstream_now = TIMESTAMP '2026-11-29 06:00:00'")
con.execute(sys.argv[2]); con.close()
PY
  (cd "$P" && DBT_PROFILES_DIR=. "$DBT" build "${@:3}" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' \
     | grep -E " (FAIL|ERROR) |Done\." | sed 's/^[0-9:]* *//' || true)
  cp "$W/clean.duckdb" "$W/bikeshare.duckdb"
}
NOW="getvariable('upstream_now')::TIMESTAMP"
sim 01_trips_member_nulls "UPDATE dock.trip_log_v3 SET member_id = NULL WHERE started_at >= TIMESTAMP '2026-11-27 06:00:00' AND trip_id % 5 IN (0, 2)"
sim 02_payments_amount_renamed "ALTER TABLE billing.pmt_feed_raw RENAME COLUMN amount_cents TO amount_minor"
sim 03_payment_method_recoded "UPDATE billing.pmt_feed_raw SET \"PaymentMethod\" = 'apple_pay' WHERE paid_at >= $NOW - INTERVAL 1 DAY"
sim 04_members_v2_plan_recoded "UPDATE crm.members_v2 SET plan = upper(plan) WHERE joined_at >= $NOW - INTERVAL 2 DAY"
sim 05_legacy_members_coincidence "UPDATE crm.members SET plan = 'premium'"
sim 06_member_directory_skipped "DELETE FROM main_core.member_directory WHERE joined_at > $NOW - INTERVAL 48 HOUR" --exclude dim_members
sim 06_member_directory_skipped_cautious "DELETE FROM main_core.member_directory WHERE joined_at > $NOW - INTERVAL 48 HOUR" --exclude dim_members --indirect-selection cautious
sim 07_trips_duplicated "INSERT INTO dock.trip_log_v3 SELECT * FROM dock.trip_log_v3 WHERE trip_id % 20 = 3"
sim 08_stations_lost_control "DELETE FROM dock.stations WHERE district = 'Harbour'"
rm -f "$W/clean.duckdb"
