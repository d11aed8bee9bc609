"""Coincidences a random draw makes: a check fails once with no change in the data it reads (a
timeout, a lost connection), while something real changes nearby that does not reach it. The
expected answer is an abstention that names the change a coincidence.

What changes, drawn from what lineage says cannot reach the check: a column renamed, or a burst
of NULLs, on the failing check's own branch but off its checked columns' paths (no column
lineage from it, and it decides no rows on the way); rows lost from a relation whose columns
feed none of the checked ones; an owner, a description or a tag changed in DataHub only; a
numeric column widened (no value changes); a real fault on a branch that does not feed the
check at all."""

from __future__ import annotations

import random
from typing import Any

from upstream_dagster.evaluation.draw_kinds import fault, kinds
from upstream_dagster.evaluation.estate_model import Check, Estate
from upstream_dagster.reliability.walk import ROWS, column_ancestors, reachable

WIDER = {"TINYINT": "BIGINT", "SMALLINT": "BIGINT", "INTEGER": "BIGINT", "FLOAT": "DOUBLE"}
MOVES = ("rename", "nulls", "rows", "metadata", "widen", "off_branch")


def _reach(estate: Estate, check: Check) -> tuple[set[tuple[str, str]], bool]:
    """The (relation, column) pairs the check's lineage reaches, and whether lineage is known
    for the checked relation at all (else nothing may be called off its path)."""
    target = (check.relation, (check.column or ROWS).lower())
    known = any(down[0] == check.relation for _, down in estate.column_edges)
    return column_ancestors(estate.column_edges, target), known


def _off_columns(estate: Estate, check: Check, near: set[str]) -> list[tuple[str, str]]:
    reached, known = _reach(estate, check)
    if not known:
        return []
    out = []
    for relation in sorted(near):
        for column, _ in estate.relations.get(relation, []):
            if (relation, column.lower()) in reached:
                continue
            if relation == check.relation and column.lower() == (check.column or "").lower():
                continue
            out.append((relation, column))
    return out


def _off_rows(estate: Estate, check: Check, near: set[str]) -> list[str]:
    """Relations on the branch whose rows reach no checked column (for a check on columns)."""
    reached, known = _reach(estate, check)
    if not known or check.column is None:
        return []
    return sorted(r for r in near - {check.relation} if not any(n == r for n, _ in reached))


def change(rng: random.Random, estate: Estate, check: Check) -> tuple[dict[str, Any], str] | None:
    """A real change that cannot explain ``check`` failing, and a phrase saying what it is."""
    near = estate.upstream_of(check.relation) | {check.relation}
    below = reachable(check.relation, estate.downstream)
    move = rng.choice(MOVES)
    f: dict[str, Any]
    if move in ("rename", "nulls") and (cols := _off_columns(estate, check, near)):
        relation, column = rng.choice(cols)
        if move == "rename":
            f = {"kind": "rename_column", "relation": relation, "column": column,
                 "to": f"{column}_v2"}  # fmt: skip
            return f, f"{relation}.{column} is renamed, off the checked columns' paths"
        f = {"kind": "null_column", "relation": relation, "column": column, "fraction": 0.6}
        return f, f"{relation}.{column} goes mostly NULL, off the checked columns' paths"
    if move == "rows" and (rels := _off_rows(estate, check, near)):
        relation = rng.choice(rels)
        f = {"kind": "delete_rows", "relation": relation, "fraction": rng.choice((0.05, 0.3))}
        return f, f"{relation} loses rows, though none of its columns feeds the checked ones"
    if move == "metadata":
        relation = rng.choice(sorted(near & set(estate.relations)))
        aspect, value = rng.choice(
            (("owner", "mallory"), ("description", "edited by hand"), ("tag", "deprecated"))
        )
        f = {"kind": "metadata", "relation": relation, "aspect": aspect, "to": value}
        return f, f"the {aspect} of {relation} is changed in DataHub only"
    widen = [(r, c, WIDER[t.upper()]) for r in sorted(near) for c, t in estate.relations.get(r, [])
             if t.upper() in WIDER]  # fmt: skip
    if move == "widen" and widen:
        relation, column, wider = rng.choice(widen)
        f = {"kind": "change_type", "relation": relation, "column": column, "to": wider}
        return f, f"{relation}.{column} is widened to {wider}"
    off = sorted(set(estate.relations) - near - below)
    if off:
        relation = rng.choice(off)
        f = fault(rng, estate, relation, rng.choice(kinds(estate, relation)))
        return f, f"a {f['kind']} fault lands on {relation}, off its branch"
    return None


def coincidence(
    rng: random.Random, estate: Estate, i: int, n: int, seed: int
) -> dict[str, Any] | None:
    """One coincidence case, as the scenario's fields."""
    checks = [c for c in estate.checks if c.relation in estate.relations]
    if not checks:
        return None
    check = rng.choice(checks)
    found = change(rng, estate, check)
    if found is None:
        return None
    f, what = found
    return {
        "name": f"random-{seed}-{i:02d}-coincidence-{check.relation.replace('.', '-')}",
        "description": f"seeded draw {i} of {n} (seed {seed}): {check.name} fails on "
        f"{check.relation} with no change in the data, while {what}",
        "faults": [f],
        "flaky": [{"check": check.name, "dataset": check.relation, "column": check.column}],
        "trigger": {"dataset": check.relation, "check": check.name},
        "expect": {"abstain": True},
    }
