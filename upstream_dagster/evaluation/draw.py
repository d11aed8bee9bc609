"""Seeded random faults over whatever estate is built: `upstream eval --random N --seed S`.

Nothing here knows the demo. A draw picks a relation DataHub's lineage shows upstream of a
checked dataset (a raw feed or any dbt model), then a fault kind that applies to it, then a
column and the fault's size: NULLs, zeros, a unit change, lost, duplicated or late rows, a
rename, a dropped column, a changed type, a model the build skips. A fault on a feed changes
its table; a fault on a model changes the model's code (`evaluation.faults.model_sql`), as it
happens in life. Schema changes are drawn too: whether one is silent or stops the build depends
on how each model reads the column, which is exactly what the investigation must find out.

The expected root cause follows from where the fault was put: the faulted relation, and its
column for a column fault. The estate is clean before the fault, on a pinned clock, so any check
that fails after it fails because of it; a fault that fires no check is a monitoring gap, shown
and not graded.

About one draw in five is a coincidence instead: a monitor fails once with no change in the
data (a timeout) while something else changed in the same window: a real fault on a branch that
does not feed the failing dataset, or a harmless schema change upstream of it (a numeric column
widened). Nothing explains the failure, so the expected answer is an abstention; these are the
draws where a confident answer would be wrong.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from upstream_dagster.datahub import Target, connected
from upstream_dagster.datahub.model import assertion_properties
from upstream_dagster.evaluation.breakage import monitor_assertions
from upstream_dagster.evaluation.scenario import Scenario
from upstream_dagster.reliability.walk import reachable
from upstream_dagster.settings import Settings
from upstream_dagster.spec.urns import entity_type, relation_of
from upstream_dagster.warehouse import duckdb_warehouse as wh
from upstream_dagster.warehouse.dbt_project import DbtProject

# The kinds whose expected cause names the column; the others are about the rows.
COLUMN_KINDS = frozenset(
    {"null_column", "zero_values", "scale_values", "rename_column", "drop_column", "change_type"}
)


@dataclass(frozen=True)
class Estate:
    relations: dict[str, list[tuple[str, str]]]  # relation -> [(column, type)]
    models: set[str]  # relations a dbt model builds (the rest are feeds)
    downstream: dict[str, set[str]]  # relation -> relations it feeds
    checked: set[str]  # relations with an assertion
    monitors: tuple[tuple[str, str], ...] = ()  # (estate.yaml monitor, the relation it fails on)
    seeds: frozenset[str] = frozenset()  # relations dbt loads from a CSV (no retyping sticks)
    views: frozenset[str] = frozenset()  # relations that are views: always as fresh as upstream

    def candidates(self) -> list[str]:
        """Relations whose fault can reach a check: a checked one, or one upstream of it."""
        return sorted(
            r for r in self.relations if ({r} | reachable(r, self.downstream)) & self.checked
        )


def read_estate(settings: Settings) -> Estate:
    with connected(Target.of(settings)) as graph:
        edges = graph.lineage_edges()
        runs = graph.assertion_runs()
    down: dict[str, set[str]] = {}
    for e in edges:
        if entity_type(e.downstream) != "dataset" or entity_type(e.upstream) != "dataset":
            continue
        up, dn = relation_of(e.upstream), relation_of(e.downstream)
        if up != dn:  # not a dbt node and its warehouse table
            down.setdefault(up, set()).add(dn)
    checked = {relation_of(r.asserted_urn) for r in runs}
    with connected(Target.of(settings)) as graph:
        names = {
            str(assertion_properties(i.get("assertionInfo") or {}).get("upstream_monitor", ""))
            for i in graph.get_aspects(
                sorted({r.assertion_urn for r in runs}), ["assertionInfo"]
            ).values()
        }
        monitors = tuple(
            (name, relation_of(found[0][1]))
            for name in sorted(n for n in names if n)
            if (found := monitor_assertions(graph, name)) and found[0][1]
        )
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
    return Estate(
        relations, models & set(relations), down, checked, monitors, frozenset(seeds), views
    )


def _kinds(estate: Estate, relation: str) -> list[str]:
    cols = estate.relations[relation]
    dated = wh.date_column(cols) is not None
    typed = [c for c, t in cols if wh.is_numeric(t) or wh.date_column([(c, t)])]
    kinds = ["null_column", "rename_column", "drop_column"] if cols else []
    kinds += ["zero_values", "scale_values"] if any(wh.is_numeric(t) for _, t in cols) else []
    kinds += ["change_type"] if typed and relation not in estate.seeds else []
    kinds += ["delete_rows", "duplicate_rows"]
    kinds += ["stale"] if dated else []
    # a view is never left behind by a skipped build: it reads its upstream when queried
    kinds += ["skip_model"] if dated and relation in estate.models - estate.views else []
    return kinds


def _fault(rng: random.Random, estate: Estate, relation: str, kind: str) -> dict[str, Any]:
    cols = estate.relations[relation]
    numeric = [c for c, t in cols if wh.is_numeric(t)]
    typed = [c for c, t in cols if wh.is_numeric(t) or wh.date_column([(c, t)])]
    fault: dict[str, Any] = {"kind": kind, "relation": relation}
    match kind:
        case "null_column":
            column = rng.choice([c for c, _ in cols])
            fault |= {"column": column, "fraction": rng.choice((0.3, 0.6, 0.9))}
        case "zero_values":
            fault |= {"column": rng.choice(numeric), "fraction": rng.choice((0.5, 1.0))}
        case "scale_values":
            fault |= {"column": rng.choice(numeric), "factor": rng.choice((0.01, 0.1, 10.0))}
            fault |= {"days": rng.choice((2, 3))} if wh.date_column(cols) else {}
        case "rename_column":
            column = rng.choice([c for c, _ in cols])
            fault |= {"column": column, "to": f"{column}_v2"}
        case "drop_column":
            fault |= {"column": rng.choice([c for c, _ in cols])}
        case "change_type":
            fault |= {"column": rng.choice(typed), "to": "VARCHAR"}
        case "delete_rows":
            fault |= {"fraction": rng.choice((0.3, 0.6, 0.9))}
        case "duplicate_rows":
            fault |= {"days": rng.choice((1, 2, 3))} if wh.date_column(cols) else {}
            fault |= {} if "days" in fault else {"fraction": 0.5}
        case "stale" | "skip_model":
            fault |= {"hours": rng.choice((48, 96, 168))}
    return fault


WIDER = {"TINYINT": "BIGINT", "SMALLINT": "BIGINT", "INTEGER": "BIGINT", "FLOAT": "DOUBLE"}


def _coincidence(rng: random.Random, estate: Estate, i: int, n: int, seed: int) -> Scenario | None:
    """A monitor fails with no change in the data while a real fault lands off its branch or
    a numeric column upstream of it is widened (no value changes): nothing explains it."""
    monitor, failing = rng.choice(estate.monitors)
    ups = {r for r in estate.relations if failing in reachable(r, estate.downstream)}
    below: set[str] = reachable(failing, estate.downstream)
    off = sorted(set(estate.relations) - ups - {failing} - below)
    widen = [(r, c, WIDER[t.upper()]) for r in sorted(ups | {failing})
             for c, t in estate.relations[r] if t.upper() in WIDER]  # fmt: skip
    if off and (not widen or rng.random() < 0.5):
        relation = rng.choice(off)
        fault = _fault(rng, estate, relation, rng.choice(_kinds(estate, relation)))
        what = f"a {fault['kind']} fault lands on {relation}, off its branch"
    elif widen:
        relation, column, wider = rng.choice(widen)
        fault = {"kind": "change_type", "relation": relation, "column": column, "to": wider}
        what = f"{relation}.{column} is widened to {wider}"
    else:
        return None
    return Scenario.model_validate(
        {
            "name": f"random-{seed}-{i:02d}-coincidence-{failing.replace('.', '-')}",
            "description": f"seeded draw {i} of {n} (seed {seed}): monitor {monitor} fails on "
            f"{failing} with no change in the data, while {what}",
            "faults": [fault],
            "flaky": [monitor],
            "trigger": {"dataset": failing, "check": monitor},
            "expect": {"abstain": True},
        }
    )


def draw(estate: Estate, n: int, seed: int) -> list[Scenario]:
    """``n`` faults, the same ones for the same seed and estate."""
    rng = random.Random(seed)
    pool = estate.candidates()
    out = []
    for i in range(1, n + 1):
        if estate.monitors and rng.random() < 0.2:
            found = _coincidence(rng, estate, i, n, seed)
            if found is not None:
                out.append(found)
                continue
        relation = rng.choice(pool)
        kind = rng.choice(_kinds(estate, relation))
        fault = _fault(rng, estate, relation, kind)
        column = fault.get("column") if kind in COLUMN_KINDS else None
        where = "model" if relation in estate.models else "feed"
        name = f"random-{seed}-{i:02d}-{kind}-{relation.replace('.', '-')}"
        cause = {"dataset": relation, **({"column": column} if column else {})}
        out.append(
            Scenario.model_validate(
                {
                    "name": name,
                    "description": f"seeded draw {i} of {n} (seed {seed}): {kind} on the "
                    f"{where} {relation}" + (f", column {column}" if column else ""),
                    "faults": [fault],
                    "expect": {"root_cause": cause},
                }
            )
        )
    return out
