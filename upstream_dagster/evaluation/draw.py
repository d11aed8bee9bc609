"""Seeded random faults over whatever estate is built: `upstream eval --random N --seed S`.

Nothing here knows the demo. The feeds are the relations DataHub's lineage shows with
consumers and no upstream of their own; their columns and types come from the warehouse. A
draw is a data primitive (NULLs, zeros, a unit change, lost, duplicated or late rows) on a feed
and, where it applies, a column. The expected result follows from lineage and the checks
DataHub holds: the faulted feed when the fault reaches a checked asset (a column fault through
column lineage to a checked column, a row fault to any checked dataset), otherwise abstain.

Schema changes (rename, drop, retype) are left to the written cases: whether one is silent or
fails the build depends on how each model reads the column, which a draw cannot know.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from upstream_dagster.datahub import Target, connected
from upstream_dagster.datahub.assertions import assertion_columns
from upstream_dagster.evaluation.scenario import Scenario
from upstream_dagster.reliability.investigate import reachable
from upstream_dagster.settings import Settings
from upstream_dagster.spec.urns import entity_type, field_dataset, field_path, relation_of
from upstream_dagster.warehouse import duckdb_warehouse as wh

Col = tuple[str, str]  # (schema.table, column)


@dataclass(frozen=True)
class Estate:
    feeds: dict[str, list[tuple[str, str]]]  # feed -> [(column, type)]
    downstream: dict[str, set[str]]  # relation -> relations it feeds
    column_downstream: dict[Col, set[Col]]
    checked: set[str]  # relations with an assertion
    checked_columns: set[Col]  # columns an assertion names


def read_estate(settings: Settings) -> Estate:
    with connected(Target.of(settings)) as graph:
        edges = graph.lineage_edges()
        runs = graph.assertion_runs()
        infos = graph.get_aspects(sorted({r.assertion_urn for r in runs}), ["assertionInfo"])
    down: dict[str, set[str]] = {}
    has_up: set[str] = set()
    cols: dict[Col, set[Col]] = {}
    for e in edges:
        if entity_type(e.downstream) != "dataset" or entity_type(e.upstream) != "dataset":
            continue
        up, dn = relation_of(e.upstream), relation_of(e.downstream)
        if up == dn:
            continue  # a dbt node and its warehouse table
        down.setdefault(up, set()).add(dn)
        has_up.add(dn)
        for c in e.columns:
            a, b = field_dataset(c.upstream_field), field_dataset(c.downstream_field)
            if a and b:
                key = (relation_of(a), field_path(c.upstream_field).lower())
                cols.setdefault(key, set()).add((relation_of(b), field_path(c.downstream_field)))
    checked = {relation_of(r.asserted_urn) for r in runs}
    checked_cols: set[Col] = set()
    for r in runs:
        info = infos.get(r.assertion_urn, {}).get("assertionInfo") or {}
        for column in assertion_columns(info):
            checked_cols.add((relation_of(r.asserted_urn), column.lower()))
    with wh.connect(settings.warehouse) as con:
        tables = wh.relations(con)
    feeds = {rel: tables[rel] for rel in sorted(set(down) - has_up) if rel in tables}
    lowered = {k: {(d, c.lower()) for d, c in v} for k, v in cols.items()}
    return Estate(feeds, down, lowered, checked, checked_cols)


def reaches_check(estate: Estate, relation: str, column: str | None) -> bool:
    if column is None:
        return bool(({relation} | reachable(relation, estate.downstream)) & estate.checked)
    start = (relation, column.lower())
    return bool(({start} | reachable(start, estate.column_downstream)) & estate.checked_columns)


def draw(estate: Estate, n: int, seed: int) -> list[Scenario]:
    """``n`` faults, the same ones for the same seed and estate."""

    rng = random.Random(seed)
    feeds = sorted(estate.feeds)
    out = []
    for i in range(1, n + 1):
        relation = rng.choice(feeds)
        columns = [(c, t) for c, t in estate.feeds[relation] if not c.lower().endswith("_id")]
        numeric = [c for c, t in columns if wh.is_numeric(t)]
        kinds = ["null_column"] if columns else []
        kinds += ["delete_rows", "duplicate_rows", "stale"]
        kinds += ["zero_values", "scale_values"] if numeric else []
        kind = rng.choice(kinds)
        fault: dict[str, Any] = {"kind": kind, "relation": relation}
        if kind == "null_column":
            fault |= {"column": rng.choice([c for c, _ in columns]), "fraction": 0.6}
        elif kind == "zero_values":
            fault |= {"column": rng.choice(numeric)}
        elif kind == "scale_values":
            fault |= {"column": rng.choice(numeric), "factor": 0.1, "days": 2}
        elif kind == "delete_rows":
            fault |= {"fraction": 0.8}
        elif kind == "duplicate_rows":
            fault |= {"days": 2}
        else:
            fault |= {"hours": 96}
        column = fault.get("column")
        expect: dict[str, Any] = (
            {"root_cause": {"dataset": relation, **({"column": column} if column else {})}}
            if reaches_check(estate, relation, column)
            else {"abstain": True}
        )
        name = f"random-{seed}-{i:02d}-{kind}-{relation.replace('.', '-')}"
        out.append(
            Scenario.model_validate(
                {
                    "name": name,
                    "description": f"seeded draw {i} of {n} (seed {seed})",
                    "faults": [fault],
                    "expect": expect,
                }
            )
        )
    return out
