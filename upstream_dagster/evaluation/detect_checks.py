"""The estate's checks, run on a sandbox warehouse the way each runs after a build: the dbt
tests (read from the sandbox build's run_results.json), dbt source freshness, the estate.yaml
monitors (each against the clean sandbox's observation, as the previous run's), and the
DataHub assertions Upstream runs (those coverage proposals wrote, and guards incidents left).

Each returns the names of the checks failing now; a fault is caught by those that fail after it
and passed on the clean copy."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from upstream_dagster import clock
from upstream_dagster.reliability.rules import judge
from upstream_dagster.services.observe import Node, measure
from upstream_dagster.services.templates import evaluate_template, learn
from upstream_dagster.spec.models import Monitor
from upstream_dagster.spec.urns import relation_of
from upstream_dagster.warehouse import duckdb_warehouse as wh
from upstream_dagster.warehouse.names import in_warehouse

Failing = frozenset[str]
BaseKey = tuple[str, str, str | None]  # (monitor, relation, column)


def dbt_failures(project_dir: Path, manifest: dict[str, Any]) -> Failing:
    """The tests that failed and the models that would not build in the last dbt command."""
    path = project_dir / "target" / "run_results.json"
    if not path.exists():
        return frozenset()
    nodes = manifest.get("nodes") or {}
    out = set()
    for r in json.loads(path.read_text()).get("results", []):
        uid, status = str(r.get("unique_id", "")), str(r.get("status", ""))
        name = str((nodes.get(uid) or {}).get("name") or uid.split(".")[-1])
        if uid.startswith("test.") and status in ("fail", "error"):
            out.add(f"dbt test {name}")
        elif uid.startswith(("model.", "seed.", "snapshot.")) and status == "error":
            out.add(f"the dbt build ({name} failed)")
    return frozenset(out)


def freshness_failures(project_dir: Path) -> Failing:
    """The sources `dbt source freshness` found past their error threshold."""
    path = project_dir / "target" / "sources.json"
    if not path.exists():
        return frozenset()
    return frozenset(
        f"dbt source freshness {str(r.get('unique_id', '')).partition('.')[2].partition('.')[2]}"
        for r in json.loads(path.read_text()).get("results", [])
        if r.get("status") in ("error", "runtime error")
    )


@dataclass(frozen=True)
class Watch:
    """The checks Upstream runs itself, and what the clean sandbox showed for each."""

    monitors: tuple[tuple[Monitor, Node], ...]
    templates: tuple[tuple[str, str, str], ...]  # (assertion, dataset, template)
    guards: tuple[tuple[str, str, str, str], ...]  # (assertion, dataset, rule, column)
    before: tuple[tuple[BaseKey, float | None], ...] = ()  # the clean observations
    renamed: tuple[tuple[str, str], ...] = ()  # DataHub's schema.table -> the warehouse's

    def table(self, dataset: str) -> str:
        return in_warehouse(dataset, dict(self.renamed))

    def observed(self, warehouse: Path) -> Watch:
        """This watch with the clean observations (the previous run's, for each monitor)."""
        seen: list[tuple[BaseKey, float | None]] = []
        with wh.connect(warehouse) as con:
            tables = wh.relations(con)
            for m, node in self.monitors:
                for column in _columns(m):
                    obs = _measure(con, tables, m, node.table, column, None)
                    seen.append(((m.name, node.table, column), obs))
        return Watch(self.monitors, self.templates, self.guards, tuple(seen))

    def failing(self, warehouse: Path) -> Failing:
        """Every monitor, proposed assertion and guard failing (or unable to look) now."""
        base = dict(self.before)
        out = set()
        with wh.connect(warehouse) as con:
            tables = wh.relations(con)
            for m, node in self.monitors:
                for column in _columns(m):
                    prev = base.get((m.name, node.table, column))
                    if not _passes(con, tables, m, node.table, column, prev):
                        out.add(
                            f"monitor {m.name} on {node.table}" + (f".{column}" if column else "")
                        )
            for _, dataset, template in self.templates:
                # queried by the warehouse's name, labelled by DataHub's (the dial's key)
                if not _template_passes(con, tables, self.table(dataset), template):
                    out.add(f"assertion {template} on {relation_of(dataset)}")
            for _, dataset, rule, column in self.guards:
                if not _guard_passes(con, tables, self.table(dataset), rule, column):
                    out.add(f"guard {rule} on {relation_of(dataset)}.{column}")
        return frozenset(out)


def _columns(m: Monitor) -> list[str | None]:
    return [*m.columns] or [None]


def _measure(
    con: Any, tables: dict[str, wh.Columns], m: Monitor, table: str, column: str | None,
    prev: float | None,
) -> float | None:  # fmt: skip
    try:
        return measure(con, tables.get(table, []), m, table, column, prev).observed
    except duckdb.Error:
        return None


def _passes(
    con: Any, tables: dict[str, wh.Columns], m: Monitor, table: str, column: str | None,
    prev: float | None,
) -> bool:  # fmt: skip
    """A monitor's judgement; one that cannot look (a column gone) reports an error, which
    pages a person as a failure does."""
    try:
        obs = measure(con, tables.get(table, []), m, table, column, prev)
    except duckdb.Error:
        return False
    return judge(m.rule, obs, m.threshold).passed


def _guard_passes(
    con: Any, tables: dict[str, wh.Columns], table: str, rule: str, column: str
) -> bool:
    cols = {c.lower() for c, _ in tables.get(table, [])}
    if column.lower() not in cols:
        return False
    if rule == "schema_contract":
        return True
    try:
        return wh.null_share(con, table, column) == 0
    except duckdb.Error:
        return False


def _template_passes(con: Any, tables: dict[str, wh.Columns], table: str, template: str) -> bool:
    try:
        return evaluate_template(con, table, tables.get(table), template, clock.now()).passed
    except duckdb.Error:
        return False


def candidates(warehouse: Path, table: str, sla: float | None) -> tuple[str, ...]:
    """The assertion templates Upstream runs that hold on ``table`` in the clean copy: rows
    present, fresh within the tier's SLA, each column never NULL, each key unique, each code
    column within its values, each measure within bounds around its values. Only a template
    that passes on clean data can catch a fault without paging on a clean day."""
    with wh.connect(warehouse) as con:
        tables = wh.relations(con)
        cols = tables.get(table, [])
        found = ["row_count_above_zero"]
        found += [f"freshness_within_{sla:g}h"] if sla and wh.date_column(cols) else []
        found += [f"not_null:{c}" for c, _ in cols]
        found += [f"unique:{c}" for c in _keys(cols)]
        found += learn(con, table, cols) if table in tables else []
        return tuple(t for t in found if _template_passes(con, tables, table, t))


def _keys(cols: wh.Columns) -> list[str]:
    """Columns that name rows: an id or key, and the first column (usually the grain)."""
    keyed = [c for c, _ in cols if c.lower() == "id" or c.lower().endswith(("_id", "_key"))]
    return list(dict.fromkeys(([cols[0][0]] if cols else []) + keyed))


def failing_templates(warehouse: Path, table: str, templates: tuple[str, ...]) -> tuple[str, ...]:
    """Those of ``templates`` that fail on ``table`` now (or cannot look: a column gone)."""
    if not templates:
        return ()
    with wh.connect(warehouse) as con:
        tables = wh.relations(con)
        return tuple(t for t in templates if not _template_passes(con, tables, table, t))
