"""What a random draw knows of the built estate, read from DataHub, the dbt manifest and the
warehouse: relations and their columns, table and column lineage, the checks (estate.yaml
monitors and dbt tests) and the relations they check, and the code values of categorical text
columns. Nothing here knows the demo."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from upstream_dagster.datahub import Target, connected
from upstream_dagster.datahub.assertions import assertion_column, check_kind
from upstream_dagster.datahub.model import assertion_properties
from upstream_dagster.datahub.probe import GraphProbe
from upstream_dagster.reliability.health import Window
from upstream_dagster.reliability.walk import reachable
from upstream_dagster.settings import Settings
from upstream_dagster.spec.urns import entity_type
from upstream_dagster.warehouse import duckdb_warehouse as wh
from upstream_dagster.warehouse.dbt_project import DbtProject
from upstream_dagster.warehouse.names import in_warehouse, renamed_at

ColumnEdge = tuple[tuple[str, str], tuple[str, str]]


@dataclass(frozen=True)
class Check:
    name: str  # an estate.yaml monitor's name, or a dbt test's
    relation: str
    column: str | None
    kind: str  # the monitor's rule or the test's kind


@dataclass(frozen=True)
class Estate:
    relations: dict[str, list[tuple[str, str]]]  # relation -> [(column, type)]
    models: set[str]  # relations a dbt model builds (the rest are feeds)
    downstream: dict[str, set[str]]  # relation -> relations it feeds
    checked: set[str]  # relations with an assertion
    monitors: tuple[tuple[str, str], ...] = ()  # (estate.yaml monitor, the relation it fails on)
    seeds: frozenset[str] = frozenset()  # relations dbt loads from a CSV (no retyping sticks)
    views: frozenset[str] = frozenset()  # relations that are views: always as fresh as upstream
    checks: tuple[Check, ...] = ()  # every monitor and dbt test, with what it checks
    column_edges: tuple[ColumnEdge, ...] = ()  # (relation, column) -> (relation, column | "*")
    categories: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # code values
    renamed: dict[str, str] = field(default_factory=dict)  # DataHub's name -> the warehouse's

    def relation(self, urn: str) -> str:
        """The warehouse's ``schema.table`` of the dataset DataHub names ``urn``."""
        return in_warehouse(urn, self.renamed)

    def candidates(self) -> list[str]:
        """Relations whose fault can reach a check: a checked one, or one upstream of it."""
        return sorted(
            r for r in self.relations if ({r} | reachable(r, self.downstream)) & self.checked
        )

    def upstream_of(self, relation: str) -> set[str]:
        return {r for r in self.relations if relation in reachable(r, self.downstream)}


def _checks(
    settings: Settings, rel: Callable[[str], str]
) -> tuple[set[str], tuple[tuple[str, str], ...], list[Check]]:
    with connected(Target.of(settings)) as graph:
        runs = graph.assertion_runs()
        infos = graph.get_aspects(sorted({r.assertion_urn for r in runs}), ["assertionInfo"])
    checked = {rel(r.asserted_urn) for r in runs}
    found: dict[tuple[str, str, str | None], Check] = {}
    for run in runs:
        info = (infos.get(run.assertion_urn) or {}).get("assertionInfo") or {}
        props = assertion_properties(info)
        unique_id = str(props.get("dbt_unique_id", ""))
        name = str(props.get("upstream_monitor") or "") or (
            unique_id.split(".")[2] if unique_id.startswith("test.") else ""
        )
        kind = check_kind(info)
        if not name or kind in ("", "build", "freshness"):
            continue
        relation = rel(run.asserted_urn)
        key = (name, relation, assertion_column(info))
        found.setdefault(key, Check(name, relation, key[2], kind))
    checks = sorted(found.values(), key=lambda c: (c.name, c.relation, c.column or ""))
    monitors = sorted(
        {(c.name, c.relation) for c in checks if c.kind not in _DBT_KINDS},
    )
    return checked, tuple(monitors), checks


_DBT_KINDS = ("not_null", "unique", "relationships", "accepted_values")


def _categories(
    con: Any, tables: dict[str, list[tuple[str, str]]]
) -> dict[str, dict[str, list[str]]]:
    out: dict[str, dict[str, list[str]]] = {}
    for table, cols in sorted(tables.items()):
        text = [
            c for c, t in cols if not wh.is_numeric(t) and not t.upper().startswith(wh.TEMPORAL)
        ]
        for column in text:
            rows = con.execute(
                f"SELECT DISTINCT {wh.quote(column)}::VARCHAR FROM {wh.rel(table)} "
                f"WHERE {wh.quote(column)} IS NOT NULL LIMIT {wh.CATEGORICAL + 1}"
            ).fetchall()
            if 1 < len(rows) <= wh.CATEGORICAL:
                out.setdefault(table, {})[column] = sorted(str(r[0]) for r in rows)
    return out


def read_estate(settings: Settings) -> Estate:
    """The estate in the warehouse's names (a dbt source by its identifier, not the name
    DataHub gives it), so a fault drawn on a relation lands on a table that exists."""
    renamed = dict(renamed_at(settings.dbt_manifest))

    def rel(urn: str) -> str:
        return in_warehouse(urn, renamed)

    with connected(Target.of(settings)) as graph:
        edges = graph.lineage_edges()
        probe = GraphProbe(graph, Window(0, 0), budget=10**6)
        columns = tuple(
            sorted({((rel(a[0]), a[1]), (rel(b[0]), b[1])) for a, b in probe.column_edges()})
        )
    down: dict[str, set[str]] = {}
    for e in edges:
        if entity_type(e.downstream) != "dataset" or entity_type(e.upstream) != "dataset":
            continue
        up, dn = rel(e.upstream), rel(e.downstream)
        if up != dn:  # not a dbt node and its warehouse table
            down.setdefault(up, set()).add(dn)
    checked, monitors, checks = _checks(settings, rel)
    manifest = DbtProject.of(settings).manifest()
    models, seeds = set(), set()
    for props in manifest["nodes"].values():
        name = f"{props['schema']}.{props.get('alias') or props['name']}".lower()
        if props["resource_type"] == "model":
            models.add(name)
        elif props["resource_type"] == "seed":
            seeds.add(name)
    with wh.connect(settings.warehouse) as con:
        tables = wh.relations(con)
        views = wh.views(con)
        in_lineage = set(down) | {d for ds in down.values() for d in ds}
        relations = {r: tables[r] for r in sorted(in_lineage) if r in tables}
        categories = _categories(con, relations)
    return Estate(
        relations,
        models & set(relations),
        down,
        checked,
        monitors,
        frozenset(seeds),
        views,
        tuple(checks),
        columns,
        categories,
        renamed,
    )
