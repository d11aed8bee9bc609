"""The faults a random draw puts on one relation: the classic kinds (NULLs, zeros, a unit change,
lost, duplicated or late rows, a renamed, dropped or retyped column, a model the build skips, a
value set to another, a shifted timestamp) and the small, partial ones real incidents are made
of (a few rows of a lookup, one percent duplicated, one code value in another case, one day's
rows arriving after later days')."""

from __future__ import annotations

import random
from typing import Any

from upstream_dagster.evaluation.estate_model import Estate
from upstream_dagster.warehouse import duckdb_warehouse as wh

# The kinds whose expected cause names the column; the others are about the rows.
COLUMN_KINDS = frozenset(
    {
        "null_column",
        "zero_values",
        "scale_values",
        "rename_column",
        "drop_column",
        "change_type",
        "set_value",
        "shift_time",
    }
)


def kinds(estate: Estate, relation: str) -> list[str]:
    cols = estate.relations[relation]
    dated = wh.date_column(cols) is not None
    typed = [c for c, t in cols if wh.is_numeric(t) or wh.date_column([(c, t)])]
    out = ["null_column", "rename_column", "drop_column"] if cols else []
    out += ["zero_values", "scale_values"] if any(wh.is_numeric(t) for _, t in cols) else []
    out += ["change_type"] if typed and relation not in estate.seeds else []
    out += ["delete_rows", "duplicate_rows"]
    out += ["stale", "shift_time"] if dated else []
    out += ["set_value"] if estate.categories.get(relation) else []
    # a view is never left behind by a skipped build: it reads its upstream when queried
    out += ["skip_model"] if dated and relation in estate.models - estate.views else []
    return out


def fault(rng: random.Random, estate: Estate, relation: str, kind: str) -> dict[str, Any]:
    cols = estate.relations[relation]
    numeric = [c for c, t in cols if wh.is_numeric(t)]
    typed = [c for c, t in cols if wh.is_numeric(t) or wh.date_column([(c, t)])]
    out: dict[str, Any] = {"kind": kind, "relation": relation}
    match kind:
        case "null_column":
            column = rng.choice([c for c, _ in cols])
            out |= {"column": column, "fraction": rng.choice((0.3, 0.6, 0.9))}
        case "zero_values":
            out |= {"column": rng.choice(numeric), "fraction": rng.choice((0.5, 1.0))}
        case "scale_values":
            out |= {"column": rng.choice(numeric), "factor": rng.choice((0.01, 0.1, 10.0))}
            out |= {"days": rng.choice((2, 3))} if wh.date_column(cols) else {}
        case "rename_column":
            column = rng.choice([c for c, _ in cols])
            out |= {"column": column, "to": f"{column}_v2"}
        case "drop_column":
            out |= {"column": rng.choice([c for c, _ in cols])}
        case "change_type":
            out |= {"column": rng.choice(typed), "to": "VARCHAR"}
        case "delete_rows":
            out |= {"fraction": rng.choice((0.3, 0.6, 0.9))}
        case "duplicate_rows":
            out |= {"days": rng.choice((1, 2, 3))} if wh.date_column(cols) else {}
            out |= {} if "days" in out else {"fraction": 0.5}
        case "stale" | "skip_model":
            out |= {"hours": rng.choice((48, 96, 168))}
        case "set_value":
            out |= _set_value(rng, estate, relation)
        case "shift_time":
            dated = [c for c, t in cols if wh.date_column([(c, t)])]
            out |= {"column": rng.choice(dated), "hours": rng.choice((-72.0, -24.0, 24.0, 48.0))}
    return out


def _set_value(rng: random.Random, estate: Estate, relation: str) -> dict[str, Any]:
    """A code value written another way (upper case), or a value nothing downstream expects."""
    column, values = rng.choice(sorted(estate.categories[relation].items()))
    value = rng.choice(values)
    if rng.random() < 0.5 and value != value.upper():
        return {"column": column, "value": f"upper({column})", "where": _eq(column, value)}
    return {"column": column, "value": "'unknown'", "fraction": rng.choice((0.05, 0.2, 0.5))}


def _eq(column: str, value: str) -> str:
    return f"{column} = '" + value.replace("'", "''") + "'"


PARTIAL = ("delete_rows", "duplicate_rows", "set_value", "late_rows", "out_of_order")


def partial_kinds(estate: Estate, relation: str) -> list[str]:
    dated = wh.date_column(estate.relations[relation]) is not None
    out = ["delete_rows", "duplicate_rows"]
    out += ["set_value"] if estate.categories.get(relation) else []
    out += ["late_rows", "out_of_order"] if dated else []
    return out


def partial(rng: random.Random, estate: Estate, relation: str, kind: str) -> dict[str, Any]:
    """A small fault: a few percent of the rows, or the rows of one code value, or one day."""
    cats = sorted(estate.categories.get(relation, {}).items())
    out: dict[str, Any] = {"kind": kind, "relation": relation}
    narrow = {}
    if cats and rng.random() < 0.6:
        column, values = rng.choice(cats)
        narrow = {"where": _eq(column, rng.choice(values))}
    match kind:
        case "delete_rows" | "duplicate_rows":
            out |= {"fraction": rng.choice((0.01, 0.02, 0.03))} | narrow
        case "set_value":
            out |= _set_value(rng, estate, relation)
        case "late_rows":
            out |= {"hours": rng.choice((24.0, 48.0))} | narrow
        case "out_of_order":
            out |= {"days": rng.choice((2, 3, 4))} | narrow
    return out
