#!/bin/bash
# Check, WITHOUT Upstream, that the clean project builds green and that a plain-SQL rendering of
# each case's fault, followed by the plain `dbt build` a tool would run (incremental, NOT
# --full-refresh), makes the check the case names fail, or fails nothing where that is the
# point (03, 05, 08: their check fails only because the case marks it flaky).
# The project is copied to a scratch folder first; nothing is written into this folder.
# Usage: verify/verify.sh [PYTHON] [DBT]   (defaults: /work/main/.venv/bin/{python,dbt})
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
PY=${1:-/work/main/.venv/bin/python}
DBT=${2:-/work/main/.venv/bin/dbt}
S=/tmp/blind-materializations-2026-12-04     # scratch: warehouse, project copy, dbt targets
W=$S/warehouse                               # profiles.yml's DuckDB path lives here
P=$S/project
export DBT_SEND_ANONYMOUS_USAGE_STATS=false
rm -rf "$P" "$S/target" "$S/logs"
mkdir -p "$W" "$P"
cp -r "$HERE/dbt_project.yml" "$HERE/profiles.yml" "$HERE/models" "$HERE/snapshots" "$HERE/tests" "$P/"

rm -f "$W/meterdata.duckdb"
"$PY" "$HERE/verify/load_feeds.py" "$W/meterdata.duckdb" "$HERE/feeds.sql"

build() {  # [dbt args...]: dbt build, its FAIL/ERROR/WARN lines and summary
  (cd "$P" && DBT_PROFILES_DIR=. "$DBT" build --target-path "$S/target" --log-path "$S/logs" "$@" \
     2>&1 | sed 's/\x1b\[[0-9;]*m//g' | grep -E " (FAIL|ERROR|WARN) [0-9]* ?[a-zA-Z_]|ERROR creating|Done\." \
     | sed 's/^[0-9:]* *//' | grep -v "^[0-9]* of [0-9]* START" || true)
}
sql() {  # SQL: run it on the warehouse with the clock pinned; prints any rows
  "$PY" - "$W/meterdata.duckdb" "$1" <<'PY'
import sys

import duckdb

con = duckdb.connect(sys.argv[1])
con.execute("SET VARIABLE upstream_now = TIMESTAMP '2026-11-29 06:00:00'")
rows = con.execute(sys.argv[2]).fetchall()
if rows and rows != [(None,)]:
    print("    ->", rows)
con.close()
PY
}
COMPILED=$S/target/compiled/meterdata/models/core/fct_interval_reads.sql
failed=0
check() {  # LABEL EXPECT(regex) TEXT
  if grep -qE "$2" <<<"$3"; then echo "   OK ($1): $2"; else echo "   MISSING ($1): $2"; failed=1; fi
}

echo "== clean build (first build: fct_interval_reads is created whole)"
out=$(build)
echo "$out"
grep -q "PASS=38 WARN=0 ERROR=0 SKIP=0 NO-OP=1 TOTAL=39" <<<"$out" || { echo "clean build not green"; exit 1; }
if grep -q "interval 48 hour" "$COMPILED"; then echo "   first build compiled the incremental filter?"; exit 1; fi
echo "   fct_interval_reads compiled WITHOUT its incremental filter (is_incremental() was false)"
cp "$W/meterdata.duckdb" "$W/clean.duckdb"

sim() {  # NAME EXPECT(regex the build output must match) FAULT_SQL...: faults, then dbt build
  local name=$1 expect=$2
  shift 2
  echo "== $name"
  for f in "$@"; do
    echo "   fault: $f"
    sql "$f"
  done
  out=$(build)
  echo "$out" | sed 's/^/   /'
  check "$name" "$expect" "$out"
}
reset() { cp "$W/clean.duckdb" "$W/meterdata.duckdb"; }

sim 00_control_rebuild_no_fault "PASS=38 WARN=0 ERROR=0 SKIP=0"
grep -q "interval 48 hour" "$COMPILED" || { echo "   the rebuild did not run incrementally"; exit 1; }
echo "   fct_interval_reads compiled WITH its incremental filter now (same model code):"
grep -n "interval 48 hour" "$COMPILED" | sed 's/^/     /'
reset

F01="UPDATE ami.interval_reads SET kwh = NULL WHERE meter_id IN ('MTR-0007', 'MTR-0011', 'MTR-0017') AND read_at >= TIMESTAMP '2026-11-28 06:00:00'"
sim 01_recent_kwh_nulls_merged "FAIL 54 not_null_fct_interval_reads_kwh " "$F01"
reset

F02="INSERT INTO ami.interval_reads SELECT * FROM ami.interval_reads WHERE read_at >= TIMESTAMP '2026-11-08 00:00:00' AND read_at < TIMESTAMP '2026-11-09 00:00:00'"
sim 02_old_batch_replayed "FAIL 30 assert_meter_day_at_most_24_reads " "$F02"
if grep -q "unique_fct_interval_reads_read_id" <<<"$out"; then echo "   MISSING: unique on fct_interval_reads failed"; failed=1; else echo "   OK: unique_fct_interval_reads_read_id passes (the incremental fact never saw the copies)"; fi
echo "   rows in the feed, the view and the incremental fact; read_ids seen twice in each:"
sql "SELECT (SELECT count(*) FROM ami.interval_reads), (SELECT count(*) FROM main_staging.stg_interval_reads), (SELECT count(*) FROM main_core.fct_interval_reads), (SELECT count(*) - count(DISTINCT read_id) FROM main_staging.stg_interval_reads), (SELECT count(*) - count(DISTINCT read_id) FROM main_core.fct_interval_reads)"
reset

F03="UPDATE ami.interval_reads SET kwh = NULL WHERE read_at >= TIMESTAMP '2026-11-10 00:00:00' AND read_at < TIMESTAMP '2026-11-11 00:00:00'"
sim 03_old_kwh_nulls_not_reprocessed "PASS=38 WARN=0 ERROR=0 SKIP=0" "$F03"
echo "   NULL kwh in the feed (all quality), in the view (quality <> 'X'), in fct_interval_reads:"
sql "SELECT (SELECT count(*) FROM ami.interval_reads WHERE kwh IS NULL), (SELECT count(*) FROM main_staging.stg_interval_reads WHERE kwh IS NULL AND quality <> 'X'), (SELECT count(*) FROM main_core.fct_interval_reads WHERE kwh IS NULL)"
echo "   agg_meter_read_quality moved (reads_without_value on 2026-11-10), though no check reads it:"
sql "SELECT sum(reads_without_value) FROM main_marts.agg_meter_read_quality WHERE read_date = DATE '2026-11-10'"
echo "   counterfactual: the same fault, rebuilt with --full-refresh (not what a rebuild runs)"
out=$(build --full-refresh)
echo "$out" | sed 's/^/   /'
check 03_full_refresh_counterfactual "FAIL 713 not_null_fct_interval_reads_kwh " "$out"
reset

F04="UPDATE market.tariffs SET rate_per_kwh = rate_per_kwh * 100 WHERE tariff_code = 'RES-EV'"
sim 04_ev_rate_in_pence_via_ephemeral "FAIL 180 assert_daily_bill_plausible " "$F04"
echo "   relations in the warehouse named like the ephemeral model (expect none):"
sql "SELECT count(*) FROM information_schema.tables WHERE table_name = 'int_meter_tariffs'"
reset

F05="UPDATE ami.interval_reads SET firmware_version = NULL WHERE read_at >= TIMESTAMP '2026-11-28 00:00:00'"
sim 05_firmware_nulls_flaky_kwh_monitor "PASS=38 WARN=0 ERROR=0 SKIP=0" "$F05"
echo "   fct_interval_reads on 2026-11-28: rows, NULL share of firmware_version, NULL share of kwh:"
sql "SELECT count(*), round(avg((firmware_version IS NULL)::INT), 3), round(avg((kwh IS NULL)::INT), 3) FROM main_core.fct_interval_reads WHERE read_date = DATE '2026-11-28'"
reset

F06A="DELETE FROM market.tariffs WHERE tariff_code = 'SME-TOU'"
F06B="UPDATE crm.meters SET premise_id = 'PRM-9' || right(meter_id, 3) WHERE meter_id IN ('MTR-0002', 'MTR-0006', 'MTR-0014', 'MTR-0021', 'MTR-0026')"
sim 06_tariff_retired_beside_premise_moves \
  "FAIL 6 relationships_dim_meters_tariff_code__tariff_code__ref_stg_tariffs_ " "$F06A" "$F06B"
echo "   rows in meters_snapshot (30 before), dim_meters rows whose premise changed:"
sql "SELECT (SELECT count(*) FROM main_snapshots.meters_snapshot), (SELECT count(*) FROM main_core.dim_meters WHERE premise_id LIKE 'PRM-9%')"
reset
echo "== 06_decoy_alone: the premise moves without the tariff deletion fail nothing"
sql "$F06B"
out=$(build)
echo "$out" | sed 's/^/   /'
check 06_decoy_alone "PASS=38 WARN=0 ERROR=0 SKIP=0" "$out"
reset

F07A="UPDATE ami.interval_reads SET kwh = kwh * 1000 WHERE firmware_version = 'v5.2' AND read_at >= TIMESTAMP '2026-11-28 00:00:00'"
F07B="UPDATE crm.meters SET region = 'EAST' WHERE region = 'NORTH' AND meter_id <= 'MTR-0012'"
sim 07_wh_and_rezoning_two_faults "FAIL 10 assert_daily_bill_plausible " "$F07A" "$F07B"
echo "   fct_daily_bills rows whose region changed, and how many of them fail the bill cap:"
sql "SELECT count(*), count(*) FILTER (WHERE total_charge > 50) FROM main_marts.fct_daily_bills WHERE meter_id IN ('MTR-0004', 'MTR-0008', 'MTR-0012')"
reset
echo "== 07_decoy_alone: the re-zoning without the Wh fault fails nothing"
sql "$F07B"
out=$(build)
echo "$out" | sed 's/^/   /'
check 07_decoy_alone "PASS=38 WARN=0 ERROR=0 SKIP=0" "$out"
reset

F08="DELETE FROM crm.meters WHERE meter_id IN ('MTR-0009', 'MTR-0018', 'MTR-0027')"
sim 08_meters_dropped_snapshot_keeps_flaky "PASS=38 WARN=0 ERROR=0 SKIP=0" "$F08"
echo "   crm.meters rows, dim_meters rows, fct reads orphaned against dim_meters, against crm.meters:"
sql "SELECT (SELECT count(*) FROM crm.meters), (SELECT count(*) FROM main_core.dim_meters), (SELECT count(*) FROM main_core.fct_interval_reads r WHERE NOT EXISTS (SELECT 1 FROM main_core.dim_meters m WHERE m.meter_id = r.meter_id)), (SELECT count(*) FROM main_core.fct_interval_reads r WHERE NOT EXISTS (SELECT 1 FROM crm.meters m WHERE m.meter_id = r.meter_id))"
reset

rm -f "$W/clean.duckdb"
if [ "$failed" != 0 ]; then echo "== verify: FAILED"; exit 1; fi
echo "== verify: every case's check behaves as EXPECT.md says"
