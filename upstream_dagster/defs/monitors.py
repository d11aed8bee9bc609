"""Monitors and profiles: the signals the reliability controller reasons over.

Each monitor in estate.yaml becomes a Dagster asset check on the dbt assets its selectors
match, reported into DataHub as an assertion with a run event. `warehouse_profiles` profiles
every relation after each build (rows, NULLs, means) into DataHub's ``datasetProfile``.
"""

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import dagster as dg

from upstream_dagster import clock, warehouse
from upstream_dagster.defs.resources import DataHubResource
from upstream_dagster.reliability.monitors import Judgement, Observation, judge
from upstream_dagster.settings import Settings
from upstream_dagster.spec.models import EstateSpec, Monitor, Selector
from upstream_dagster.spec.urns import name_matches, to_urn

# dbt meta keys that DataHub's dbt source maps onto aspects (see datahub/ingest.py).
_META = {"owners": "owner", "domains": "domain", "terms": "terms", "tags": "tier"}


@dataclass(frozen=True)
class Node:
    key: dg.AssetKey
    urn: str
    table: str  # schema.table in the warehouse
    meta: tuple[tuple[str, str], ...]


def manifest_nodes(manifest: dict[str, Any], key_of: Any) -> list[Node]:
    from upstream_dagster.datahub.signals import dbt_urn

    out = []
    for props in [*manifest["nodes"].values(), *manifest["sources"].values()]:
        if props["resource_type"] not in ("model", "source"):
            continue
        name = props.get("alias") or props.get("identifier") or props["name"]
        meta = {**(props.get("meta") or {}), **((props.get("config") or {}).get("meta") or {})}
        out.append(
            Node(
                key=key_of(props),
                urn=dbt_urn(props["database"], props["schema"], name),
                table=f"{props['schema']}.{name}".lower(),
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


def monitored(spec: EstateSpec, nodes: list[Node]) -> list[tuple[Monitor, Node]]:
    return [(m, n) for m in spec.monitors for n in nodes if any(_selects(s, n) for s in m.match)]


def _measure(
    con: Any, cols: warehouse.Columns, monitor: Monitor, node: Node, column: str | None, prev: Any
) -> Observation:
    names = {c.lower(): c for c, _ in cols}
    if column and column.lower() not in names:
        return Observation(None, missing=f"column {column} is missing from {node.table}")
    col = names.get((column or "").lower(), "")
    if monitor.rule == "null_rate_jump":
        return Observation(warehouse.null_share(con, node.table, col), prev)
    day_col = warehouse.date_column(cols, monitor.date_column)
    if day_col is None:
        if monitor.rule == "volume":
            return Observation(float(warehouse.row_count(con, node.table)), prev)
        return Observation(None, missing=f"{node.table} has no DATE or TIMESTAMP column")
    last = (clock.now() - timedelta(days=1)).date()  # the last complete day
    expr = "count(*)" if monitor.rule == "volume" else f'sum("{col}")'
    series = warehouse.daily(con, node.table, day_col, expr, last, monitor.window_days)
    trailing = [v for d, v in series.items() if d < last]
    base = sum(trailing) / monitor.window_days if trailing else None
    return Observation(series.get(last, 0.0), base)


def measure_node(
    con: Any, monitor: Monitor, urn: str, column: str | None, prev: float | None
) -> Observation:
    """One monitor measurement of the relation behind a dataset URN (a sandbox re-check)."""
    from upstream_dagster.reliability.investigate import relation_of

    table = relation_of(urn)
    node = Node(dg.AssetKey(table.split(".")), urn, table, ())
    return _measure(con, warehouse.relations(con).get(table, []), monitor, node, column, prev)


def monitor_checks(
    settings: Settings, spec: EstateSpec, nodes: list[Node], after: dg.AssetKey
) -> list[dg.AssetChecksDefinition]:
    pairs = monitored(spec, nodes)
    if not pairs:
        return []
    by_check = {dg.AssetCheckKey(node.key, f"monitor_{m.name}"): (m, node) for m, node in pairs}
    specs = [
        dg.AssetCheckSpec(
            key.name,
            asset=key.asset_key,
            # After the profiles (and so after ingestion): a symptom is stamped after DataHub
            # learned of every change its build made.
            additional_deps=[after],
            description=f"estate.yaml monitor {m.name}: {m.rule.replace('_', ' ')}"
            + (f" on {', '.join(m.columns)}" if m.columns else "")
            + f" (threshold {m.threshold}). Reported into DataHub as an assertion.",
        )
        for key, (m, _) in by_check.items()
    ]

    @dg.multi_asset_check(
        specs=specs,
        name="estate_monitors",
        can_subset=True,
        description="The monitors block of estate.yaml: deterministic rules over the warehouse, "
        "each reported into DataHub as an assertion with a run event.",
    )
    def estate_monitors(
        context: dg.AssetCheckExecutionContext, datahub: DataHubResource
    ) -> Iterator[dg.AssetCheckResult]:
        from upstream_dagster.datahub import open_graph
        from upstream_dagster.datahub.signals import (
            MonitorReport,
            monitor_assertion_urn,
            report_monitor,
        )

        graph = open_graph(datahub.target(settings))
        at = clock.observed_ms()
        try:
            with warehouse.connect(settings.warehouse) as con:
                tables = warehouse.relations(con)
                for key in sorted(context.selected_asset_check_keys, key=str):
                    m, node = by_check[key]
                    cols = tables.get(node.table, [])
                    verdicts: list[tuple[str | None, Judgement]] = []
                    runs = graph.assertion_runs([node.urn])  # one read for every column
                    for column in m.columns or [None]:
                        urn = monitor_assertion_urn(m.name, node.urn, column)
                        prev = next(
                            (
                                dict(r.native).get("observed")
                                for r in runs
                                if r.assertion_urn == urn
                            ),
                            None,
                        )
                        obs = _measure(con, cols, m, node, column, float(prev) if prev else None)
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
                                context.run.run_id,
                            ),
                        )
                        verdicts.append((column, verdict))
                    failed = [f"{c or 'rows'}: {v.message}" for c, v in verdicts if not v.passed]
                    yield dg.AssetCheckResult(
                        asset_key=key.asset_key,
                        check_name=key.name,
                        passed=not failed,
                        metadata={
                            "result": dg.MetadataValue.md(
                                "\n".join(
                                    f"- {'PASS' if v.passed else 'FAIL'} {c or 'rows'}: {v.message}"
                                    for c, v in verdicts
                                )
                            ),
                            "failing_columns": len(failed),
                            "reported_to": settings.backend,
                        },
                        description="; ".join(failed) or None,
                    )
        finally:
            graph.close()

    return [estate_monitors]


def profiles_asset(settings: Settings, nodes: list[Node], deps: list[Any]) -> dg.AssetsDefinition:
    @dg.asset(
        deps=deps,
        group_name="datahub",
        kinds={"datahub", "duckdb"},
        description="Profiles every relation of the estate after each build (rows, NULL share "
        "and mean per column) into DataHub's datasetProfile, so the lineage walk can compare "
        "each node with its own history.",
    )
    def warehouse_profiles(
        context: dg.AssetExecutionContext, datahub: DataHubResource
    ) -> dg.MaterializeResult:
        from upstream_dagster.datahub import open_graph
        from upstream_dagster.datahub.signals import report_profile

        graph = open_graph(datahub.target(settings))
        at = clock.observed_ms()
        written, missing = 0, []
        try:
            with warehouse.connect(settings.warehouse) as con:
                tables = warehouse.relations(con)
                for node in nodes:
                    if node.table not in tables:
                        missing.append(node.table)
                        continue
                    cols = tables[node.table]
                    prof = warehouse.profile(con, node.table, cols, at)
                    written += report_profile(graph, node.urn, prof).written
                    # The last complete day alone: a level shift in recent days hides in a
                    # whole-table profile.
                    day_col = warehouse.date_column(cols)
                    if day_col:
                        last = (clock.now() - timedelta(days=1)).date()
                        prof = warehouse.profile(con, node.table, cols, at, (day_col, last))
                        report_profile(graph, node.urn, prof)
            guards = run_guards(graph, settings, at, context.run.run_id)
        finally:
            graph.close()
        if missing:
            context.log.warning(f"not in the warehouse, not profiled: {', '.join(missing)}")
        return dg.MaterializeResult(
            metadata={
                "profiled": written,
                "missing": dg.MetadataValue.json(missing),
                "guards_checked": len(guards),
                "guards_failing": dg.MetadataValue.json([g for g, ok in guards if not ok]),
            }
        )

    return warehouse_profiles


def run_guards(graph: Any, settings: Settings, at: int, run_id: str) -> list[tuple[str, bool]]:
    """Evaluate the guard assertions incidents left at ingestion boundaries (schema contract:
    the column exists; not_null: it holds no NULL) and report each into DataHub."""
    from upstream_dagster.datahub.signals import guard_assertions, report_run
    from upstream_dagster.reliability.investigate import relation_of

    out = []
    with warehouse.connect(settings.warehouse) as con:
        tables = warehouse.relations(con)
        for urn, dataset, rule, column in guard_assertions(graph):
            cols = {c.lower() for c, _ in tables.get(relation_of(dataset), [])}
            present = column.lower() in cols
            if rule == "schema_contract" or not present:
                ok, message = present, f"column {column} {'present' if present else 'missing'}"
            else:
                share = warehouse.null_share(con, relation_of(dataset), column)
                ok, message = share == 0, f"{column} is {share:.0%} NULL"
            report_run(graph, urn, dataset, ok, {"message": message}, at, run_id)
            out.append((urn, ok))
    return out
