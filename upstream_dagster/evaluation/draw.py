"""Seeded random faults over whatever estate is built: `upstream eval --random N --seed S`.

Nothing here knows the demo. A draw picks a relation DataHub's lineage shows upstream of a
checked dataset (a raw feed or any dbt model), then a fault kind that applies to it, then a
column and the fault's size. A fault on a feed changes its table; a fault on a model changes
the model's code (`evaluation.faults.model_sql`), as it happens in life. Schema changes are
drawn too: whether one is silent or stops the build depends on how each model reads the column,
which is exactly what the investigation must find out.

Three kinds of draw (`draw_kinds`, `draw_coincide`):

- *classic* faults, about half: NULLs, zeros, a unit change, lost, duplicated or late rows, a
  rename, a dropped column, a changed type, a value set to another, a shifted timestamp, a
  model the build skips;
- *small, partial* faults, about a quarter: one to three percent of the rows lost or sent
  twice, or the rows of one code value; a code value written another way; the last day's rows
  late; one earlier day's rows arriving after later days';
- *coincidences*, about a quarter: a check (a monitor or a dbt test) fails once with no change
  in the data it reads, while something real changes that lineage says cannot reach it: a
  rename or a NULL burst off its checked columns' paths, rows lost where no column feeds the
  checked ones, a metadata-only change in DataHub, a widened column, a fault off its branch.

The expected root cause follows from where the fault was put: the faulted relation, and its
column for a column fault; a coincidence expects an abstention. The estate is clean before the
fault, on a pinned clock, so any check that fails after it fails because of it; a fault that
fires no check is a monitoring gap, shown and not graded.
"""

from __future__ import annotations

import random
from typing import Any

from upstream_dagster.evaluation.draw_coincide import coincidence
from upstream_dagster.evaluation.draw_kinds import (
    COLUMN_KINDS,
    fault,
    kinds,
    partial,
    partial_kinds,
)
from upstream_dagster.evaluation.estate_model import Check, Estate, read_estate
from upstream_dagster.evaluation.scenario import Scenario

__all__ = ["COLUMN_KINDS", "Check", "Estate", "draw", "read_estate"]

COINCIDENCE = 0.25  # the share of draws that are coincidences
PARTIAL = 0.25  # ... and small, partial faults


def _case(i: int, n: int, seed: int, estate: Estate, f: dict[str, Any], small: bool) -> Scenario:
    kind, relation = f["kind"], f["relation"]
    column = f.get("column") if kind in COLUMN_KINDS else None
    where = "model" if relation in estate.models else "feed"
    size = "a small " if small else ""
    return Scenario.model_validate(
        {
            "name": f"random-{seed}-{i:02d}-{kind}-{relation.replace('.', '-')}",
            "description": f"seeded draw {i} of {n} (seed {seed}): {size}{kind} on the {where} "
            f"{relation}" + (f", column {column}" if column else ""),
            "faults": [f],
            "expect": {
                "root_cause": {"dataset": relation, **({"column": column} if column else {})}
            },
        }
    )


def draw(estate: Estate, n: int, seed: int) -> list[Scenario]:
    """``n`` faults, the same ones for the same seed and estate."""
    rng = random.Random(seed)
    pool = estate.candidates()
    out = []
    for i in range(1, n + 1):
        roll = rng.random()
        if roll < COINCIDENCE:
            found = coincidence(rng, estate, i, n, seed)
            if found is not None:
                out.append(Scenario.model_validate(found))
                continue
        relation = rng.choice(pool)
        if roll < COINCIDENCE + PARTIAL:
            f = partial(rng, estate, relation, rng.choice(partial_kinds(estate, relation)))
            out.append(_case(i, n, seed, estate, f, small=True))
            continue
        f = fault(rng, estate, relation, rng.choice(kinds(estate, relation)))
        out.append(_case(i, n, seed, estate, f, small=False))
    return out
