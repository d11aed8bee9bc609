"""What Upstream observes in the warehouse and reports into DataHub: each estate.yaml monitor
measured on the relations it selects (an assertion with a run event), every relation's profile
(rows, NULL share and mean per column), and the guards incidents left at ingestion boundaries.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb

from upstream_dagster import clock
from upstream_dagster.datahub import signals
from upstream_dagster.datahub.protocol import MetadataGraph
from upstream_dagster.datahub.signals import (
    MonitorReport,
    guard_assertions,
    monitor_assertion_urn,
    report_monitor,
    report_profile,
    report_run,
)
from upstream_dagster.reliability.rules import Judgement, Observation, judge
from upstream_dagster.services.templates import CheckOutcome, evaluate_template
from upstream_dagster.spec.models import EstateSpec, Monitor, Selector
from upstream_dagster.spec.urns import (
    dbt_urn,
    entity_type,
    name_matches,
    platform_of,
    to_urn,
)
from upstream_dagster.warehouse import duckdb_warehouse as wh
from upstream_dagster.warehouse.duckdb_warehouse import Columns, Warehouse
from upstream_dagster.warehouse.names import datahub_table, table_name

# dbt meta keys that DataHub's dbt source maps onto aspects (see datahub/ingest.py).
_META = {"owners": "owner", "domains": "domain", "terms": "terms", "tags": "tier"}


@dataclass(frozen=True)
class Node:
    """A dbt model or source: its DataHub URN, its warehouse relation and its dbt meta."""

    unique_id: str
    urn: str
    table: str  # schema.table in the warehouse
    meta: tuple[tuple[str, str], ...]


# what the estate profiles and monitors: a snapshot is a table too (its profile says whether a
# refresh that ran it wrote anything new)
ESTATE_NODES = ("model", "source", "seed", "snapshot")


def manifest_nodes(manifest: dict[str, Any]) -> list[Node]:
    out = []
    for props in [*manifest["nodes"].values(), *manifest["sources"].values()]:
        if props["resource_type"] not in ESTATE_NODES:
            continue
        meta = {**(props.get("meta") or {}), **((props.get("config") or {}).get("meta") or {})}
        out.append(
            Node(
                unique_id=str(props["unique_id"]),
                # DataHub names a source by its name; the warehouse by its identifier
                urn=dbt_urn(props["database"], props["schema"], datahub_table(props)),
                table=table_name(props),
                meta=tuple(sorted((str(k), str(v)) for k, v in meta.items())),
            )
        )
    return sorted(out, key=lambda n: n.urn)


def _selects(sel: Selector, node: Node) -> bool:
    """A selector over what DataHub will hold for this node once the dbt source ingests it."""
    meta = dict(node.meta)
    checks = [not sel.names or any(name_matches(node.urn, n) for n in sel.names)]
    checks.append(not sel.platforms or "dbt" in sel.platforms)
    checks.append(not sel.urns or node.urn in sel.urns)
    for kind, key in _META.items():
        wanted = getattr(sel, kind)
        if wanted:
            have = {to_urn(kind, v.strip().lstrip("@")) for v in meta.get(key, "").split(",") if v}
            checks.append(bool(have & {to_urn(kind, w) for w in wanted}))
    return all(checks)


def monitored(spec: EstateSpec, nodes: Sequence[Node]) -> list[tuple[Monitor, Node]]:
    return [(m, n) for m in spec.monitors for n in nodes if any(_selects(s, n) for s in m.match)]


def measure(
    con: Any, cols: Columns, monitor: Monitor, table: str, column: str | None, prev: float | None
) -> Observation:
    """One monitor measurement of ``table`` (and ``column``) against its baseline."""
    names = {c.lower(): c for c, _ in cols}
    if column and column.lower() not in names:
        return Observation(None, missing=f"column {column} is missing from {table}")
    col = names.get((column or "").lower(), "")
    if monitor.rule == "null_rate_jump":
        return Observation(wh.null_share(con, table, col), prev)
    day_col = wh.date_column(cols, monitor.date_column)
    if day_col is None:
        if monitor.rule == "volume":
            return Observation(float(wh.row_count(con, table)), prev)
        return Observation(None, missing=f"{table} has no DATE or TIMESTAMP column")
    last = (clock.now() - timedelta(days=1)).date()  # the last complete day
    expr = "count(*)" if monitor.rule == "volume" else f'sum("{col}")'
    series = wh.daily(con, table, day_col, expr, last, monitor.window_days)
    if not series:  # nothing dated in the whole window: there is nothing to judge
        return Observation(
            None,
            missing=f"not evaluable: {table} has no rows dated in the {monitor.window_days + 1} "
            f"days up to {last} ({day_col}); its data is older than the clock",
        )
    trailing = [v for d, v in series.items() if d < last]
    base = sum(trailing) / monitor.window_days if trailing else None
    return Observation(series.get(last, 0.0), base)


def measure_urn(
    con: Any, monitor: Monitor, table: str, column: str | None, prev: float | None
) -> Observation:
    """One monitor measurement of a relation, by name (a sandbox re-check)."""
    return measure(con, wh.relations(con).get(table, []), monitor, table, column, prev)


@dataclass(frozen=True)
class MonitorOutcome:
    monitor: Monitor
    node: Node
    verdicts: tuple[tuple[str | None, Judgement], ...]  # (column or None, judgement)

    @property
    def failed(self) -> list[str]:
        return [f"{c or 'rows'}: {v.message}" for c, v in self.verdicts if not v.passed]


def run_monitors(
    graph: MetadataGraph, warehouse: Warehouse, pairs: Sequence[tuple[Monitor, Node]], run_id: str
) -> list[MonitorOutcome]:
    """Each (monitor, node) measured and reported into DataHub, one run event per column."""
    at = clock.observed_ms()
    out = []
    with warehouse.connect() as con:
        tables = wh.relations(con)
        for m, node in pairs:
            cols = tables.get(node.table, [])
            verdicts: list[tuple[str | None, Judgement]] = []
            runs = graph.assertion_runs([node.urn])  # one read for every column
            columns: list[str | None] = [*m.columns] or [None]
            for column in columns:
                urn = monitor_assertion_urn(m.name, node.urn, column)
                prev = next(
                    (dict(r.native).get("observed") for r in runs if r.assertion_urn == urn), None
                )
                obs = measure(con, cols, m, node.table, column, float(prev) if prev else None)
                verdict = judge(m.rule, obs, m.threshold)
                report_monitor(
                    graph,
                    MonitorReport(
                        m.name,
                        m.rule,
                        node.urn,
                        column,
                        verdict.passed,
                        verdict.message,
                        obs.observed,
                        obs.baseline,
                        m.threshold,
                        at,
                        run_id,
                        verdict.evaluable,
                    ),
                )
                verdicts.append((column, verdict))
            out.append(MonitorOutcome(m, node, tuple(verdicts)))
    return out


@dataclass(frozen=True)
class Profiled:
    profiled: int
    missing: tuple[str, ...]  # relations the warehouse does not hold
    guards: tuple[tuple[str, bool], ...]  # (guard or proposed assertion, passed)
    broken: tuple[tuple[str, str], ...] = ()  # relations that would not answer, and why


def profile_all(
    graph: MetadataGraph, warehouse: Warehouse, nodes: Sequence[Node], run_id: str
) -> Profiled:
    """Every relation's profile into DataHub (the whole table, and its last complete day on
    its own: a level shift in recent days hides in a whole-table profile), then the guards."""
    at = clock.observed_ms()
    written, missing = 0, []
    broken: list[tuple[str, str]] = []
    with warehouse.connect() as con:
        tables = wh.relations(con)
        for node in nodes:
            if node.table not in tables:
                missing.append(node.table)
                continue
            cols = tables[node.table]
            try:
                prof = wh.profile(con, node.table, cols, at)
                written += report_profile(graph, node.urn, prof).written
                day_col = wh.date_column(cols)
                if day_col:
                    last = (clock.now() - timedelta(days=1)).date()
                    prof = wh.profile(con, node.table, cols, at, (day_col, last))
                    report_profile(graph, node.urn, prof)
            except duckdb.Error as exc:
                # a view whose upstream column went away no longer binds: it cannot be
                # profiled, which is what DataHub will see (no profile), not a failed step
                broken.append((node.table, str(exc).splitlines()[0][:300]))
    guards = run_guards(graph, warehouse, at, run_id)
    checks = run_template_checks(graph, warehouse, at, run_id)
    return Profiled(written, tuple(missing), tuple(guards + checks), tuple(broken))


def run_guards(
    graph: MetadataGraph, warehouse: Warehouse, at: int, run_id: str
) -> list[tuple[str, bool]]:
    """Evaluate the guard assertions incidents left at ingestion boundaries (schema contract:
    the column exists; not_null: it holds no NULL) and report each into DataHub."""
    out = []
    with warehouse.connect() as con:
        tables = wh.relations(con)
        for urn, dataset, rule, column in guard_assertions(graph):
            table = warehouse.relation(dataset)
            cols = {c.lower() for c, _ in tables.get(table, [])}
            present = column.lower() in cols
            if rule == "schema_contract" or not present:
                ok, message = present, f"column {column} {'present' if present else 'missing'}"
            else:
                try:
                    share = wh.null_share(con, table, column)
                    ok, message = share == 0, f"{column} is {share:.0%} NULL"
                except duckdb.Error as exc:
                    ok, message = False, f"the relation would not answer: {str(exc)[:200]}"
            report_run(graph, urn, dataset, ok, {"message": message}, at, run_id)
            out.append((urn, ok))
    return out


def run_template_checks(
    graph: MetadataGraph,
    warehouse: Warehouse,
    at: int,
    run_id: str,
    only: Sequence[str] | None = None,
) -> list[tuple[str, bool]]:
    """Evaluate the assertions coverage proposals wrote (or ``only`` those) and report each
    into DataHub: a proposed assertion is a check that runs on every build, not a definition
    on paper. Nothing is reported when there is no warehouse."""
    found = signals.template_assertions(graph, only)
    if not found or not warehouse.exists():
        return []
    out = []
    with warehouse.connect() as con:
        tables = wh.relations(con)
        for urn, dataset, template in found:
            table = warehouse.relation(dataset)
            try:
                outcome = evaluate_template(con, table, tables.get(table), template, clock.now())
            except duckdb.Error as exc:
                outcome = CheckOutcome(False, f"{table} would not answer: {str(exc)[:200]}", False)
            native = {"message": outcome.message, "template": template}
            report_run(
                graph, urn, dataset, outcome.passed, native, at, run_id, None, outcome.evaluable
            )
            out.append((urn, outcome.passed))
    return out


def runnable(warehouse: Warehouse, urns: Sequence[str]) -> frozenset[str]:
    """The datasets whose relation the warehouse holds (on its own platform, or a dbt model
    built there): where a proposed assertion can run."""
    if not warehouse.exists():
        return frozenset()
    with warehouse.connect() as con:
        tables = wh.relations(con)
    served = {warehouse.dialect, "dbt"}
    return frozenset(
        u
        for u in urns
        if entity_type(u) == "dataset"
        and platform_of(u) in served
        and warehouse.relation(u) in tables
    )


def build_outcomes(
    run_results: dict[str, Any], nodes: Sequence[Node], freshness: dict[str, Any] | None = None
) -> dict[str, str | None]:
    """Each model dbt ran, by its DataHub URN: dbt's error when it failed, None when it built.
    A model dbt skipped (something upstream of it failed) is neither, and is left out. A feed
    whose freshness dbt could not even measure (its load stamp column is gone, say) is a loud
    failure too: DataHub's dbt source drops such a result, so it is reported here."""
    urn_of = {n.unique_id: n.urn for n in nodes}
    out: dict[str, str | None] = {}
    for r in run_results.get("results", []):
        urn = urn_of.get(str(r.get("unique_id")))
        if urn is None or not str(r.get("unique_id")).startswith(("model.", "seed.")):
            continue
        if r.get("status") == "success":
            out[urn] = None
        elif r.get("status") == "error":
            out[urn] = _message(r)
    for r in (freshness or {}).get("results", []):
        urn = urn_of.get(str(r.get("unique_id")))
        if urn is not None:
            out[urn] = _message(r) if r.get("status") == "runtime error" else None
    return out


def _message(result: dict[str, Any]) -> str:
    return " ".join(str(result.get("message") or "dbt reported an error").split())[:1000]


def report_builds(
    graph: MetadataGraph,
    run_results: dict[str, Any],
    nodes: Sequence[Node],
    run_id: str,
    freshness: dict[str, Any] | None = None,
) -> dict[str, str]:
    """Report this build's outcomes into DataHub; returns the failed nodes' errors."""
    outcomes = build_outcomes(run_results, nodes, freshness)
    signals.report_builds(graph, outcomes, clock.observed_ms(), run_id)
    return {urn: error for urn, error in outcomes.items() if error is not None}


def restamp_freshness(sources_json: Path) -> None:
    """Stamp dbt's freshness results with the moment they were observed, like every other
    observation Upstream reports (`clock.observed_ms`). dbt stamps them with the clock it
    measured age against, which a pinned clock holds still: each build's freshness event would
    then share one time stamp, before the profiles of the build that observed it. The status and
    the age dbt computed are kept as they are."""
    if not sources_json.exists():
        return
    data = json.loads(sources_json.read_text())
    at = datetime.fromtimestamp(clock.observed_ms() / 1000, UTC).isoformat()
    for result in data.get("results", []):
        if result.get("snapshotted_at"):
            result["snapshotted_at"] = at
    sources_json.write_text(json.dumps(data))
