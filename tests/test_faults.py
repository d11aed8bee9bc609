"""Scenario faults: on a feed, statements over its table; on a dbt model, a change to its code
that the build then carries. Run against a real DuckDB; no estate needed."""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb
import pytest
from pydantic import ValidationError

from upstream_dagster.evaluation.faults import fault_sql, model_sql
from upstream_dagster.evaluation.scenario import Fault

NOW = datetime(2026, 11, 29, 6, tzinfo=UTC)
COLS = [("acct_key", "INTEGER"), ("amount", "DECIMAL(12,2)"), ("booked_at", "TIMESTAMP")]
# A model as teams write them: a CTE, a Jinja config block, a trailing comment.
MODEL = """{{ config(materialized='table') }}
with src as (select * from raw_ledger)
select acct_key, amount, booked_at from src
-- the ledger, one row per booking"""


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    c = duckdb.connect()
    c.execute(
        "create table raw_ledger as select range::INTEGER as acct_key, "
        "(range % 50 + 1)::DECIMAL(12,2) as amount, "
        "TIMESTAMP '2026-11-29 05:00:00' - to_hours(range) as booked_at from range(1000)"
    )
    return c


def run(con: duckdb.DuckDBPyConnection, fault: Fault) -> tuple[list[str], list[tuple[object, ...]]]:
    sql = model_sql(fault, COLS, MODEL, NOW).replace("{{ config(materialized='table') }}", "")
    rel = con.execute(sql)
    names = [d[0] for d in rel.description]
    return names, rel.fetchall()


def fault(**kw: object) -> Fault:
    return Fault.model_validate({"relation": "ledger.bookings", **kw})


def test_a_model_fault_changes_what_the_model_returns_and_nothing_else(
    con: duckdb.DuckDBPyConnection,
) -> None:
    names, rows = run(con, fault(kind="rename_column", column="amount", to="amount_eur"))
    assert names == ["acct_key", "amount_eur", "booked_at"] and len(rows) == 1000
    names, _ = run(con, fault(kind="drop_column", column="amount"))
    assert names == ["acct_key", "booked_at"]
    typed = model_sql(fault(kind="change_type", column="amount", to="varchar"), COLS, MODEL, NOW)
    assert 'CAST("amount" AS TEXT)'.lower() in typed.lower()
    _, rows = run(con, fault(kind="null_column", column="amount", fraction=0.6))
    nulls = sum(r[1] is None for r in rows) / len(rows)
    assert 0.5 < nulls < 0.7
    _, rows = run(con, fault(kind="delete_rows", fraction=0.3))
    assert 600 < len(rows) < 800
    _, rows = run(con, fault(kind="duplicate_rows", days=1))
    assert len(rows) == 1000 + 6  # the rows dated after the day before the clock: twice
    _, rows = run(con, fault(kind="stale", hours=48))
    assert max(r[2] for r in rows) == datetime(2026, 11, 27, 6)  # nothing newer than 48 h
    _, rows = run(con, fault(kind="scale_values", column="amount", factor=10, days=1))
    assert sum(float(r[1]) for r in rows) > sum(float(x[0]) for x in con.execute(
        "select amount from raw_ledger").fetchall())  # fmt: skip


def test_a_model_fault_on_a_column_the_model_lacks_names_the_columns_it_has() -> None:
    with pytest.raises(Exception, match="pick one of: acct_key, amount, booked_at"):
        model_sql(fault(kind="null_column", column="nope"), COLS, MODEL, NOW)


@pytest.mark.parametrize(
    "to",
    ["VARCHAR; DROP TABLE raw_ledger", "VARCHAR; COPY (SELECT 'x') TO '/tmp/f.csv'", "no_such"],
)
def test_a_change_type_target_is_a_parsed_type_never_text_pasted_into_sql(to: str) -> None:
    with pytest.raises(ValidationError, match="is not a column type"):
        fault(kind="change_type", column="amount", to=to)
    ok = fault(kind="change_type", column="amount", to="decimal(14,2)")
    (sql,) = fault_sql(ok, COLS, NOW)
    assert sql.endswith("TYPE DECIMAL(14, 2)")


def test_dbt_freshness_is_stamped_when_it_was_observed_not_at_the_pinned_clock(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pinned clock holds dbt's snapshotted_at still: every build's freshness event shared
    one stamp, days before the profiles of the build that observed it, so a feed's own
    freshness failure found no profile in its window. The status dbt computed is kept."""
    import json
    from pathlib import Path

    from upstream_dagster import clock
    from upstream_dagster.services.observe import restamp_freshness

    path = Path(str(tmp_path)) / "sources.json"
    result = {
        "unique_id": "source.p.crm.accounts",
        "status": "error",
        "snapshotted_at": "2026-11-29T06:00:00+00:00",
        "max_loaded_at_time_ago_in_s": 1e6,
    }
    path.write_text(json.dumps({"results": [result]}))
    monkeypatch.setenv("UPSTREAM_CLOCK", "2026-11-29T06:00:00Z")
    restamp_freshness(path)
    (after,) = json.loads(path.read_text())["results"]
    stamped = datetime.fromisoformat(after["snapshotted_at"]).timestamp() * 1000
    assert abs(stamped - clock.observed_ms()) < 60_000  # wall time, not the pinned clock
    assert after["status"] == "error" and after["max_loaded_at_time_ago_in_s"] == 1e6


def test_a_monitor_with_no_data_in_its_window_is_not_evaluable_never_a_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An estate whose data is years older than the clock: a volume monitor used to pass with
    "0 rows; baseline recorded". Now nothing dated in the window is an ERROR with a reason."""
    from upstream_dagster.datahub.aspects import run_event
    from upstream_dagster.reliability.rules import judge
    from upstream_dagster.services.observe import measure
    from upstream_dagster.spec.models import Monitor

    monkeypatch.setenv("UPSTREAM_CLOCK", "2026-11-29T06:00:00Z")
    con = duckdb.connect()
    con.execute(
        "create schema old; create table old.sales as select DATE '2019-03-01' as d, 5 as n"
    )
    volume = Monitor.model_validate({"name": "v", "rule": "volume", "match": [{"names": ["x"]}]})
    obs = measure(con, [("d", "DATE"), ("n", "INTEGER")], volume, "old.sales", None, None)
    verdict = judge("volume", obs, 0.5)
    assert not verdict.passed and not verdict.evaluable
    assert "not evaluable" in verdict.message and "older than the clock" in verdict.message
    event = run_event("urn:li:assertion:a", "urn:x", verdict.passed, {}, 1, "r", None, False)
    assert event["result"]["type"] == "ERROR"


def test_a_check_that_could_not_look_is_never_reported_as_failed() -> None:
    """A not-evaluable monitor (data years older than the clock, on a public dbt project) was
    counted as "1 failing now" and its RCA said "volume failed on dev.orders"."""
    from upstream_dagster.datahub.summary import EstateSummary
    from upstream_dagster.reliability.evidence import Ledger
    from upstream_dagster.reliability.health import FailingCheck, NodeView, Window, diagnose

    message = "not evaluable: dev.orders has no rows dated in the window"
    ledger = Ledger()
    node = NodeView(
        "urn:x",
        "dev.orders",
        failing=(FailingCheck("urn:a", "order_volume", None, 5, message),),
    )
    diagnose(node, Window(0, 10), ledger)
    broke = FailingCheck("urn:b", "not_null", "id", 5, "3 rows")
    diagnose(NodeView("urn:y", "dev.customers", failing=(broke,)), Window(0, 10), ledger)
    claims = [e.claim for e in ledger.items]
    assert claims[0].startswith("order_volume could not evaluate on dev.orders")
    assert claims[1].startswith("not_null failed on dev.customers")
    counted = EstateSummary(9, 9, 0, 0, 0, 9, 1, 0, 0, unevaluable_assertions=1)
    assert "(1 failing now, 1 could not evaluate)" in "\n".join(counted.lines())


def test_the_scenario_language_says_what_real_incidents_do(con: duckdb.DuckDBPyConnection) -> None:
    """A value set to another, timestamps shifted, rows late or out of order, rows chosen
    through another table: as a change to a model's code and as statements over a feed."""
    con.execute(
        "create table accts as select range::INTEGER as acct_key, "
        "case when range % 4 = 0 then 'eu' else 'us' end as region from range(1000)"
    )
    _, rows = run(con, fault(kind="set_value", column="amount", value="0", where="acct_key < 10"))
    assert sum(1 for r in rows if r[1] == 0) == 10
    _, rows = run(con, fault(kind="shift_time", hours=-24))
    assert max(r[2] for r in rows) == datetime(2026, 11, 28, 5)
    _, rows = run(con, fault(kind="late_rows", hours=10, where="acct_key % 2 = 0"))
    assert len(rows) == 1000 - 5  # the even rows of the last 10 hours are not there yet
    _, rows = run(con, fault(kind="out_of_order", days=2))
    assert len(rows) == 1000 - 24 and not any(
        r[2].date() == NOW.date().replace(day=27) for r in rows
    )
    through = {"relation": "x.accts", "on": "acct_key", "where": "region = 'eu'"}
    sql = model_sql(fault(kind="delete_rows", through=through), COLS, MODEL, NOW)
    got = con.execute(sql.replace("{{ config(materialized='table') }}", "").replace(
        '"x"."accts"', "accts")).fetchall()  # fmt: skip
    assert len(got) == 750 and all(r[0] % 4 for r in got)
    (upd,) = fault_sql(fault(kind="set_value", column="amount", value="amount * -1"), COLS, NOW)
    assert upd.startswith('UPDATE "ledger"."bookings" SET "amount" = amount * -1')


@pytest.mark.parametrize(
    "bad,message",
    [
        ({"kind": "set_value", "column": "amount", "value": "(select 1)"}, "one literal"),
        ({"kind": "set_value", "column": "amount", "value": "1; drop table x"}, "comment or"),
        ({"kind": "set_value", "column": "amount"}, "needs value"),
        ({"kind": "shift_time", "hours": 0}, "changes nothing"),
        ({"kind": "stale", "hours": -5}, "more than 0"),
        ({"kind": "metadata", "aspect": "owner", "to": "x", "fraction": 0.5}, "selects no rows"),
        (
            {"kind": "delete_rows", "through": {"relation": "a.b", "on": "x;y", "where": "1=1"}},
            "must name a column",
        ),
        ({"kind": "null_column", "column": '"user"'}, "without quotes"),
        ({"kind": "null_column", "column": "user\n"}, "without quotes"),
        ({"kind": "rename_column", "column": "user", "to": " user"}, "rename target"),
    ],
)
def test_a_fault_that_cannot_be_run_safely_is_refused_and_says_why(
    bad: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        fault(**bad)


def test_a_feed_whose_columns_need_quoting_takes_faults_on_them() -> None:
    """Columns named by a reserved word, with a space, a dash or an accent, in a mixed-case
    table, as the warehouse names them (a case names them so): each fault's statements run on
    them, and a row selection over the mixed-case table is checked against that table."""
    con = duckdb.connect()
    con.execute('create schema ils; create table ils."Loans" as select range as "user", '
                'range * 0.25 as "late fee", DATE \'2026-11-01\' + range::INT as "due-date", '
                "1990 + range as année from range(40)")  # fmt: skip
    cols = [(d[0], "X") for d in con.execute('select * from ils."Loans"').description]
    for kind, column, extra in [
        ("null_column", "user", {"where": '"late fee" > 5'}),
        ("scale_values", "late fee", {"factor": 100, "where": "année < 2000"}),
        ("rename_column", "due-date", {"to": "due date"}),
        ("null_column", "année", {"fraction": 0.5}),
    ]:
        f = Fault.model_validate({"relation": "ils.Loans", "kind": kind, "column": column, **extra})
        for statement in fault_sql(f, cols, NOW):
            con.execute(statement)
        cols = [(d[0], "X") for d in con.execute('select * from ils."Loans"').description]
    assert [c for c, _ in cols] == ["user", "late fee", "due date", "année"]
    nulls, top_fee = con.execute(
        'select count(*) - count("user"), max("late fee") from ils."Loans"'
    ).fetchone() or (0, 0)
    assert nulls == 19 and top_fee == 225  # rows 21..39 lost their user; fees before 2000 x100
