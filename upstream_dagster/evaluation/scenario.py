"""Scenario files: declarative faults over any relation and column, plus what they should cause.

A fault names a relation as ``schema.table`` (or ``database.schema.table``) and, where it
applies, a column. Nothing here knows the demo's names: a scenario over another warehouse is
written the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import sqlglot
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from upstream_dagster.errors import UpstreamError
from upstream_dagster.spec.reading import Limit, read_yaml

FaultKind = Literal[
    "rename_column",
    "drop_column",
    "null_column",
    "change_type",
    "delete_rows",
    "duplicate_rows",
    "stale",
    "skip_model",
    "zero_values",
    "scale_values",
]
_NEEDS_COLUMN = {"rename_column", "drop_column", "null_column", "change_type", "zero_values"}
_NEEDS_COLUMN |= {"scale_values"}
MAX_FAULTS = 50  # per occurrence: a scenario breaks a few things at once, never thousands
_TOO_MANY = "a scenario breaks a few things at once: split it into several scenario files"
SCENARIO_LIMITS = tuple(
    Limit(at, MAX_FAULTS, "MAX_FAULTS", "faults", _TOO_MANY)
    for at in (("faults",), ("recurrence", "faults"))
)


def sql_type(text: str) -> str:
    """``text`` parsed as a DuckDB column type and rendered back; ValueError when it is not one."""
    try:
        parsed = exp.DataType.build(text, dialect="duckdb")
    except (ParseError, TypeError, ValueError) as exc:
        raise ValueError(
            f"{text!r} is not a column type (write one such as VARCHAR, BIGINT, DECIMAL(12, 2))"
        ) from exc
    return parsed.sql("duckdb")


def condition(text: str) -> str:
    """``text`` parsed as one SQL condition (a WHERE clause's body) and rendered back by
    sqlglot; ValueError for anything else: a comment that would swallow the rest of the
    statement, a second statement, a write, a subquery reading another table."""
    if "--" in text or "/*" in text or ";" in text:
        raise ValueError(f"where {text!r} holds a comment or a ';': write one plain condition")
    try:
        parsed = sqlglot.parse_one(f"SELECT 1 WHERE {text}", read="duckdb")
    except (ParseError, TokenError) as exc:
        raise ValueError(f"where {text!r} is not a SQL condition") from exc
    where = parsed.args.get("where") if isinstance(parsed, exp.Select) else None
    if where is None or any(isinstance(n, exp.Select | exp.Query) for n in where.walk()):
        raise ValueError(f"where {text!r} must be one condition over the relation's own columns")
    return str(where.this.sql("duckdb"))


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Fault(_Strict):
    kind: FaultKind
    relation: str = Field(pattern=r"^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+){1,2}$")
    column: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_]+$")
    to: str | None = Field(default=None, description="new name (rename) or type (change_type)")
    fraction: float | None = Field(default=None, gt=0, le=1)
    factor: float | None = Field(default=None, allow_inf_nan=False, ge=-1e6, le=1e6)
    hours: float | None = Field(default=None, gt=0, le=24 * 366 * 10, allow_inf_nan=False)
    days: int | None = Field(default=None, ge=1, description="only rows of the last N days")
    where: str | None = Field(default=None, description="a SQL condition selecting rows")

    @model_validator(mode="after")
    def _complete(self) -> Fault:
        need = {
            "rename_column": ("to",),
            "change_type": ("to",),
            "scale_values": ("factor",),
            "stale": ("hours",),
            "skip_model": ("hours",),
        }.get(self.kind, ())
        missing = [n for n in need if getattr(self, n) is None]
        if self.kind in _NEEDS_COLUMN and not self.column:
            missing.insert(0, "column")
        if missing:
            raise ValueError(f"a {self.kind} fault needs {', '.join(missing)}")
        if self.kind == "rename_column" and self.to and not self.to.replace("_", "").isalnum():
            raise ValueError(f"rename target {self.to!r} must be a plain column name")
        if self.kind == "change_type" and self.to:
            sql_type(self.to)
        if self.where is not None:
            condition(self.where)
        return self

    @property
    def sql_type(self) -> str:
        """A change_type's target as SQL, rendered by sqlglot from the parsed type (the text of
        the file is never pasted into a statement)."""
        return sql_type(self.to or "")

    @property
    def table(self) -> str:
        """``schema.table``: the relation's last two parts."""
        return ".".join(self.relation.split(".")[-2:])


class RootCause(_Strict):
    dataset: str  # a dataset name, matched on its trailing parts (schema.table)
    column: str | None = None


class Expect(_Strict):
    symptom: str | None = None
    root_cause: RootCause | None = None
    abstain: bool = False

    @model_validator(mode="after")
    def _one(self) -> Expect:
        if self.abstain == (self.root_cause is not None):
            raise ValueError("expect names a root_cause, or says abstain: true (not both)")
        return self


class Trigger(_Strict):
    """Which failing check opens the incident: the first failing assertion that matches."""

    dataset: str | None = Field(default=None, description="where the check fails, schema.table")
    check: str | None = Field(
        default=None,
        description="an estate.yaml monitor's name, or a dbt test's name (not_null, unique, ...)",
    )


class Occurrence(_Strict):
    """A later occurrence: what is left out is the first occurrence's."""

    faults: list[Fault] | None = Field(default=None, max_length=MAX_FAULTS)
    flaky: list[str] | None = None
    trigger: Trigger | None = None
    expect: Expect | None = None


class Scenario(_Strict):
    name: str
    description: str = ""
    faults: list[Fault] = Field(default_factory=list, max_length=MAX_FAULTS)
    flaky: list[str] = Field(
        default_factory=list,
        description="monitor names whose next check reports a failure with no data change",
    )
    trigger: Trigger | None = None
    expect: Expect
    recurrence: Occurrence | None = Field(
        default=None,
        description="a second occurrence after the first incident's fix is approved and the "
        "estate healed: {} repeats the same faults",
    )

    @model_validator(mode="after")
    def _does_something(self) -> Scenario:
        for occ in self.occurrences:
            if not occ.faults and not occ.flaky:
                raise ValueError("a scenario needs at least one fault (or a flaky monitor)")
        return self

    @property
    def occurrences(self) -> list[Scenario]:
        """Each occurrence as a scenario of its own: the first, then the recurrence if any."""
        first = self.model_copy(update={"recurrence": None})
        if self.recurrence is None:
            return [first]
        r = self.recurrence
        second = first.model_copy(
            update={
                k: v
                for k, v in (
                    ("faults", r.faults),
                    ("flaky", r.flaky),
                    ("trigger", r.trigger),
                    ("expect", r.expect),
                )
                if v is not None
            }
        )
        return [first, second]

    @property
    def symptom(self) -> str | None:
        """The dataset whose failing check is graded."""
        if self.trigger and self.trigger.dataset:
            return self.trigger.dataset
        return self.expect.symptom


def load_scenario(path: Path) -> Scenario:
    if not path.exists():
        raise UpstreamError(f"scenario {path} does not exist", "pass a file from scenarios/")
    # a regular UTF-8 file, no bombs, at most MAX_FAULTS faults, counted while it is read
    data, _ = read_yaml(path, SCENARIO_LIMITS)
    if data is not None and not isinstance(data, dict):
        raise UpstreamError(f"{path} holds no mapping", "see scenarios/README.md for the shape")
    try:
        return Scenario.model_validate({"name": path.stem, **(data or {})})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise UpstreamError(
            f"{path}: {where}: {first['msg']}",
            "see scenarios/README.md for the fault kinds and their fields",
        ) from exc
