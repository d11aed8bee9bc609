"""Load estate.yaml; every error names the file, the line, and the fix."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from upstream_dagster.spec.models import MAX_TIERS, EstateSpec
from upstream_dagster.spec.reading import Limit, Loc, SpecError, read_yaml

__all__ = ["ESTATE_LIMITS", "SpecError", "load_estate", "read_yaml"]

ESTATE_LIMITS = (
    Limit(
        ("tiers",),
        MAX_TIERS,
        "MAX_TIERS",
        "tiers",
        "merge tiers that ask the same of their datasets: one tier's match: may list several "
        "selectors (a generated estate file gone wrong?)",
    ),
)


def _line_of(lines: dict[Loc, int], loc: Loc) -> int | None:
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return None


def _model_at(loc: Loc) -> type[BaseModel] | None:
    """The model that owns the mapping at ``loc`` (for 'did you mean' suggestions)."""
    model: Any = EstateSpec
    for part in loc:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part) if hasattr(model, "model_fields") else None
        if field is None:
            return None
        annotation = field.annotation
        args = getattr(annotation, "__args__", ())
        model = next(
            (a for a in (annotation, *args) if isinstance(a, type) and issubclass(a, BaseModel)),
            None,
        )
        if model is None:
            return None
    return model if isinstance(model, type) else None


def _describe(error: Any, lines: dict[Loc, int], file: Path) -> SpecError:
    loc: Loc = tuple(error["loc"])
    dotted = ".".join(str(p) if isinstance(p, str) else f"[{p}]" for p in loc).replace(".[", "[")
    kind = error["type"]
    if kind == "extra_forbidden":
        key = str(loc[-1])
        owner = _model_at(loc[:-1])
        known = list(owner.model_fields) if owner else []
        near = difflib.get_close_matches(key, known, n=1)
        hint = f"did you mean {near[0]!r}? " if near else ""
        what = "requirement" if owner and owner.__name__ == "Requirements" else "key"
        return SpecError(
            file,
            _line_of(lines, loc),
            f"unknown {what} {key!r} at {dotted}",
            f"{hint}valid here: {', '.join(known)}",
        )
    if kind == "missing":
        return SpecError(
            file,
            _line_of(lines, loc[:-1]),
            f"{dotted} is required but missing",
            f"add '{loc[-1]}:' here (see the commented estate.yaml for an example)",
        )
    message = str(error["msg"]).removeprefix("Value error, ")
    got = error.get("input")
    shown = f" (got {got!r})" if not isinstance(got, dict | list) else ""
    constraint = kind == "value_error" or kind.startswith(
        ("greater_than", "less_than", "too_", "string_too", "string_pattern")
    )
    fix = (
        "change the value at that line as the message says"
        if constraint
        else f"give {dotted} a value of the expected type (see the commented estate.yaml)"
    )
    return SpecError(file, _line_of(lines, loc), f"{dotted}: {message}{shown}", fix)


def load_estate(path: Path | str) -> EstateSpec:
    file = Path(path)
    data, lines = read_yaml(file, ESTATE_LIMITS)
    node = data
    if node is None or not isinstance(data, dict):
        raise SpecError(
            file,
            1,
            "the file holds no mapping of settings",
            "start with 'version: 1' and a 'tiers:' list",
        )
    try:
        return EstateSpec.model_validate(data)
    except ValidationError as exc:
        # A misspelt key also makes its correct spelling "missing": report the misspelling.
        first = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")[0]
        raise _describe(first, lines, file) from exc
