"""Issue 18: a proposed assertion is a check that runs, or it is not proposed.

Real DuckDB and a real DataHub Lite file in a temporary folder; no estate build needed.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import duckdb

from upstream_dagster.conformance.context import AssetFacts, Column, MetadataContext
from upstream_dagster.conformance.plan import plan
from upstream_dagster.conformance.proposals import assertion_urn
from upstream_dagster.datahub import Target, aspects, open_graph
from upstream_dagster.services import observe
from upstream_dagster.spec.models import EstateSpec
from upstream_dagster.warehouse.duckdb_warehouse import Warehouse

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
NOW_MS = int(NOW.timestamp() * 1000)
ORDERS = "urn:li:dataset:(urn:li:dataPlatform:duckdb,wh.sales.orders,PROD)"
EMPTY = "urn:li:dataset:(urn:li:dataPlatform:dbt,wh.sales.refunds,PROD)"
ELSEWHERE = "urn:li:dataset:(urn:li:dataPlatform:snowflake,db.sales.orders,PROD)"


def warehouse(tmp_path: Path) -> Warehouse:
    path = tmp_path / "wh.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE SCHEMA sales")
    con.execute("CREATE TABLE sales.orders (order_id INT, customer_id INT, ordered_at TIMESTAMP)")
    con.execute(
        "INSERT INTO sales.orders VALUES (1, 10, TIMESTAMP '2026-12-01 09:00'),"
        " (2, NULL, TIMESTAMP '2026-11-28 09:00')"
    )
    con.execute("CREATE TABLE sales.refunds (refund_id INT)")
    con.close()
    return Warehouse(path)


def test_each_template_is_evaluated_on_the_warehouse_and_what_it_cannot_see_is_not_a_pass(
    tmp_path: Path,
) -> None:
    wh = warehouse(tmp_path)
    with wh.connect() as con:
        from upstream_dagster.warehouse import duckdb_warehouse as dw

        tables = dw.relations(con)

        def run(table: str, template: str) -> observe.CheckOutcome:
            return observe.evaluate_template(con, table, tables.get(table), template, NOW)

        assert run("sales.orders", "row_count_above_zero").passed
        empty = run("sales.refunds", "row_count_above_zero")
        assert not empty.passed and empty.evaluable and empty.message == "0 rows"
        nulls = run("sales.orders", "not_null:customer_id")
        assert not nulls.passed and "50% NULL" in nulls.message
        assert run("sales.orders", "not_null:order_id").passed
        fresh = run("sales.orders", "freshness_within_24h")
        assert fresh.passed and "3.0h old" in fresh.message
        assert not run("sales.orders", "freshness_within_2h").passed
        no_clock = run("sales.refunds", "freshness_within_24h")
        assert not no_clock.evaluable  # no date column: cannot say, never a pass
        gone = run("sales.gone", "row_count_above_zero")
        assert not gone.evaluable and "not in the warehouse" in gone.message


def test_the_build_runs_every_proposed_assertion_and_reports_it_into_datahub(
    tmp_path: Path,
) -> None:
    wh = warehouse(tmp_path)
    graph = open_graph(Target(tmp_path / "lite.sqlite", tmp_path / "sdk", None, None), create=True)
    written = {}
    for dataset, template in ((ORDERS, "not_null:customer_id"), (EMPTY, "row_count_above_zero")):
        urn = assertion_urn(dataset, template)
        graph.write_aspect(urn, "assertionInfo", aspects.template_assertion(dataset, template))
        written[urn] = template
    # a guard or a dbt test is not Upstream's template: not run here
    graph.write_aspect(
        "urn:li:assertion:someone-else",
        "assertionInfo",
        aspects.monitor_assertion("m", "volume", 0.5, ORDERS, None),
    )
    outcomes = dict(observe.run_template_checks(graph, wh, NOW_MS, "build-1"))
    assert outcomes == {u: False for u in written}  # a NULL customer, an empty table
    runs = {r.assertion_urn: r for r in graph.assertion_runs()}
    assert {u: runs[u].result for u in written} == {u: "FAILURE" for u in written}
    graph.close()


def _ctx() -> MetadataContext:
    cols = (Column("order_id"), Column("ordered_at"))
    return MetadataContext(
        as_of_ms=NOW_MS,
        transport="test",
        assets=(
            AssetFacts(urn=ORDERS, name="wh.sales.orders", columns=cols),
            AssetFacts(urn=ELSEWHERE, name="db.sales.orders", columns=cols),
        ),
    )


def _spec() -> EstateSpec:
    return EstateSpec.model_validate(
        {
            "tiers": [
                {
                    "name": "gold",
                    "match": [{"names": ["*orders"]}],
                    "requirements": {"min_assertions": 1},
                }
            ],
            "policies": {"approvers": ["ana"]},
        }
    )


def test_no_assertion_is_proposed_where_nothing_can_run_it(tmp_path: Path) -> None:
    wh = warehouse(tmp_path)
    runnable = observe.runnable(wh, [ORDERS, ELSEWHERE, EMPTY])
    assert runnable == {ORDERS, EMPTY}  # a Snowflake table of the same name is not ours to run

    batch = plan(_ctx(), _spec(), NOW_MS, runnable=runnable)
    assert [p.asset for p in batch.proposals] == [ORDERS]
    (left,) = batch.unfixable
    assert left.asset == ELSEWHERE and "nothing would run a proposed assertion" in left.reason
    # an estate with no warehouse at all (a datapack): coverage on paper is never proposed
    nothing = plan(
        _ctx(), _spec(), NOW_MS, runnable=observe.runnable(Warehouse(tmp_path / "x"), [ORDERS])
    )
    assert not nothing.proposals and len(nothing.unfixable) == 2
    assert batch.projected.overall.passed == 1  # the proposal is projected as run when written


def test_a_view_that_no_longer_binds_is_reported_and_the_rest_is_profiled(tmp_path: Path) -> None:
    """A feed renames a column a view selects: the view no longer answers. Profiling names it
    and goes on with every other relation; the build step does not fail on it."""
    wh = warehouse(tmp_path)
    con = duckdb.connect(str(wh.path))
    con.execute("CREATE VIEW sales.recent AS SELECT order_id, customer_id FROM sales.orders")
    con.execute("ALTER TABLE sales.orders RENAME COLUMN customer_id TO customer_ref")
    con.close()
    graph = open_graph(Target(tmp_path / "lite.sqlite", tmp_path / "sdk", None, None), create=True)
    nodes = [
        observe.Node("source.x.orders", ORDERS, "sales.orders", ()),
        observe.Node(
            "model.x.recent",
            "urn:li:dataset:(urn:li:dataPlatform:duckdb,wh.sales.recent,PROD)",
            "sales.recent",
            (),
        ),
    ]
    done = observe.profile_all(graph, wh, nodes, "build-1")
    graph.close()
    assert [t for t, _ in done.broken] == ["sales.recent"]
    assert "customer_id" in done.broken[0][1]
    assert done.profiled >= 1  # the table itself was profiled
