"""The catalog of assertion templates Upstream runs itself (what a coverage or detection
proposal writes into DataHub). A template is one string, kept in the assertion's
``upstream_template`` property, so what DataHub holds is exactly what runs:

- ``row_count_above_zero``
- ``freshness_within_<N>h``: the newest value of the relation's date column is at most N hours old
- ``row_count_at_least_<N>``: at least N rows (half the clean data's, rounded down: a relation
  that grows never trips it; one that lost most of its rows does)
- ``not_null:<column>``, ``unique:<column>``
- ``accepted_values:<column>=<JSON list>``: the column holds only these values (a code column's
  values as the clean data held them; a new code or one written another way fails)
- ``in_range:<column>=<low>..<high>``: every value lies within the bounds (drawn around the clean
  data's minimum and maximum; zeroed, scaled or mistyped values fail)

Pure: parsing and wording. `services.templates` evaluates them on the warehouse and learns the
parameters from data that passes; none is typed by hand.
"""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class Template:
    kind: str
    column: str = ""
    argument: str = ""


PARAMETRISED = ("accepted_values", "in_range")
ROW_FLOOR = "row_count_at_least_"


def parse(template: str) -> Template:
    kind, _, rest = template.partition(":")
    if kind in PARAMETRISED:
        column, _, argument = rest.partition("=")
        return Template(kind, column, argument)
    return Template(kind, rest)


def accepted_values(column: str, values: list[str]) -> str:
    return f"accepted_values:{column}={json.dumps(sorted(values), ensure_ascii=False)}"


def in_range(column: str, low: float, high: float) -> str:
    return f"in_range:{column}={low:.6g}..{high:.6g}"


def row_floor(template: str) -> int | None:
    """N of ``row_count_at_least_<N>`` (None: another template, or N unreadable)."""
    if not template.startswith(ROW_FLOOR):
        return None
    digits = template.removeprefix(ROW_FLOOR)
    return int(digits) if digits.isdigit() else None


def values_of(t: Template) -> list[str] | None:
    try:
        found = json.loads(t.argument)
    except ValueError:
        return None
    ok = isinstance(found, list) and all(isinstance(v, str) for v in found)
    return found if ok else None


def bounds_of(t: Template) -> tuple[float, float] | None:
    low, sep, high = t.argument.partition("..")
    try:
        bounds = (float(low), float(high))
    except ValueError:
        return None
    return bounds if sep and bounds[0] <= bounds[1] else None


def describe(template: str) -> str:
    """What the assertion checks, for a reviewer."""
    t = parse(template)
    if t.kind == "accepted_values" and (values := values_of(t)) is not None:
        return f"{t.column} holds only {', '.join(values[:8])}" + (
            " ..." if len(values) > 8 else ""
        )
    if (floor := row_floor(template)) is not None:
        return f"at least {floor:,} rows"
    if t.kind == "in_range" and (bounds := bounds_of(t)):
        return f"every {t.column} lies between {bounds[0]:g} and {bounds[1]:g}"
    return "Upstream guard: " + template.replace("_", " ")
