"""The assertion templates (`conformance.templates`) evaluated on the warehouse, and the
parametrised ones learnt from a clean relation."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from upstream_dagster.conformance.templates import (
    PARAMETRISED,
    ROW_FLOOR,
    accepted_values,
    bounds_of,
    in_range,
    parse,
    row_floor,
    values_of,
)
from upstream_dagster.warehouse import duckdb_warehouse as wh
from upstream_dagster.warehouse.duckdb_warehouse import Columns

# a code column: few distinct values, each on several rows (free text and identifiers are not)
MAX_CODES = 20
MIN_ROWS_PER_CODE = 3


@dataclass(frozen=True)
class CheckOutcome:
    """One evaluation of a check: passed, what it saw, and whether it could look at all."""

    passed: bool
    message: str
    evaluable: bool = True


def evaluate_template(
    con: Any, table: str, cols: Columns | None, template: str, now: datetime
) -> CheckOutcome:
    """A proposal's assertion, evaluated on the warehouse. What it cannot see is not
    evaluable, never a pass; a column gone fails (the check can no longer look)."""
    if cols is None:
        return CheckOutcome(False, f"{table} is not in the warehouse", False)
    t = parse(template)
    if t.kind == "row_count_above_zero":
        rows = wh.row_count(con, table)
        return CheckOutcome(rows > 0, f"{rows} rows")
    if t.kind.startswith(ROW_FLOOR):
        floor = row_floor(template)
        if floor is None:
            return CheckOutcome(False, f"{template!r}: the row count is not a number", False)
        rows = wh.row_count(con, table)
        return CheckOutcome(rows >= floor, f"{rows:,} rows, at least {floor:,} expected")
    if t.kind.startswith("freshness_within_") and t.kind.endswith("h"):
        return _fresh(con, table, cols, t.kind, now)
    types = {c.lower(): kind for c, kind in cols}
    if t.kind not in ("not_null", "unique", *PARAMETRISED):
        return CheckOutcome(False, f"unknown check {template!r}", False)
    if t.column.lower() not in types:
        return CheckOutcome(False, f"column {t.column} missing")
    if t.kind == "not_null":
        share = wh.null_share(con, table, t.column)
        return CheckOutcome(share == 0, f"{t.column} is {share:.0%} NULL")
    if t.kind == "unique":
        twice = wh.repeated(con, table, t.column)
        return CheckOutcome(twice == 0, f"{twice} value(s) of {t.column} appear more than once")
    if t.kind == "accepted_values":
        values = values_of(t)
        if values is None:
            return CheckOutcome(False, f"{template!r}: the values are not a JSON list", False)
        return _outside_values(con, table, t.column, values)
    bounds = bounds_of(t)
    if bounds is None:
        return CheckOutcome(False, f"{template!r}: the bounds are not <low>..<high>", False)
    if not wh.is_numeric(types[t.column.lower()]):
        return CheckOutcome(False, f"{t.column} is {types[t.column.lower()]}, not a number")
    return _outside_range(con, table, t.column, bounds)


def _fresh(con: Any, table: str, cols: Columns, kind: str, now: datetime) -> CheckOutcome:
    try:
        hours = float(kind.removeprefix("freshness_within_").removesuffix("h"))
    except ValueError:
        return CheckOutcome(False, f"unknown check {kind!r}", False)
    day = wh.date_column(cols)
    if day is None:
        return CheckOutcome(False, f"{table} has no date or time column to read age", False)
    latest = wh.newest(con, table, day)
    if latest is None:
        return CheckOutcome(False, f"{day} holds no value", False)
    age = (now - latest).total_seconds() / 3600
    return CheckOutcome(age <= hours, f"newest {day} {latest:%Y-%m-%d %H:%M}, {age:.1f}h old")


def _outside_values(con: Any, table: str, column: str, values: list[str]) -> CheckOutcome:
    col = wh.quote(column)
    rows = con.execute(
        f"SELECT CAST({col} AS VARCHAR) AS v, count(*) FROM {wh.rel(table)} "
        f"WHERE {col} IS NOT NULL AND NOT list_contains(?::VARCHAR[], CAST({col} AS VARCHAR)) "
        "GROUP BY v ORDER BY count(*) DESC, v LIMIT 5",
        [values],
    ).fetchall()
    if not rows:
        return CheckOutcome(True, f"{column} holds only the {len(values)} accepted values")
    seen = ", ".join(f"{v!r} ({n} rows)" for v, n in rows)
    return CheckOutcome(False, f"{column} holds values outside the accepted list: {seen}")


def _outside_range(con: Any, table: str, column: str, bounds: tuple[float, float]) -> CheckOutcome:
    col = wh.quote(column)
    out, low, high = con.execute(
        f"SELECT count(*), min({col}), max({col}) FROM {wh.rel(table)} "
        f"WHERE {col} < ? OR {col} > ?",
        list(bounds),
    ).fetchone() or (0, None, None)
    if not out:
        return CheckOutcome(True, f"every {column} lies within {bounds[0]:g}..{bounds[1]:g}")
    return CheckOutcome(
        False,
        f"{out} row(s) of {column} outside {bounds[0]:g}..{bounds[1]:g} "
        f"(lowest {low}, highest {high})",
    )


def _round(x: float, up: bool) -> float:
    """``x`` rounded away from the data to two significant digits (a readable bound)."""
    if x == 0:
        return 0.0
    step = 10.0 ** (math.floor(math.log10(abs(x))) - 1)
    return float((math.ceil if up else math.floor)(x / step) * step)


def _named_row(column: str) -> bool:
    low = column.lower()
    return low == "id" or low.endswith(("_id", "_key"))


def _numbering(kind: str, distinct: int, total: int) -> bool:
    """An integer column whose every row holds another value, on a table of some size: it
    numbers the rows (an invoice number), and a range on it would page as the numbers grow."""
    whole = any(t in kind.upper() for t in ("INT", "HUGEINT")) and "." not in kind
    return whole and total >= 20 and distinct == total


def learn(con: Any, table: str, cols: Columns) -> list[str]:
    """The parametrised templates the clean ``table`` supports: a floor of half its rows,
    ``accepted_values`` on each code column (2 to 20 values, each on at least three rows on
    average), ``in_range`` on each numeric measure (not an identifier, nor an integer that
    numbers the rows) with bounds a factor of two around the data."""
    out: list[str] = []
    total = wh.row_count(con, table)
    floor = int(_round(total / 2, up=False)) if total >= 2 else 0
    out += [f"{ROW_FLOOR}{floor}"] if floor >= 1 else []
    for column, kind in cols:
        if _named_row(column) or total == 0 or "=" in column:  # `=` ends a template's column
            continue
        col = wh.quote(column)
        if wh.is_numeric(kind):
            sql = f"SELECT min({col}), max({col}), count(DISTINCT {col}) FROM {wh.rel(table)}"
            low, high, distinct = con.execute(sql).fetchone() or (None, None, 0)
            if low is None or high is None or _numbering(kind, distinct, total):
                continue
            lo = _round(float(low) / 2 if low > 0 else float(low) * 2, up=False)
            hi = _round(float(high) * 2 if high > 0 else float(high) / 2, up=True)
            out.append(in_range(column, lo, hi))
        elif "CHAR" in kind.upper() or kind.upper() in ("TEXT", "STRING"):
            found = con.execute(
                f"SELECT DISTINCT CAST({col} AS VARCHAR) FROM {wh.rel(table)} "
                f"WHERE {col} IS NOT NULL LIMIT {MAX_CODES + 1}"
            ).fetchall()
            codes = [str(v) for (v,) in found]
            if 2 <= len(codes) <= MAX_CODES and total >= MIN_ROWS_PER_CODE * len(codes):
                out.append(accepted_values(column, codes))
    return out
