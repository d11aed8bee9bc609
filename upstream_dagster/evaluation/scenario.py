"""Scenario files: declarative faults over any relation and column, plus what they should cause.

A fault names a relation as ``schema.table`` (or ``database.schema.table``) and, where it
applies, a column. Nothing here knows the demo's names: a scenario over another warehouse is
written the same way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from upstream_dagster.errors import UpstreamError
from upstream_dagster.evaluation.scenario_sql import condition, join_on, sql_type, value
from upstream_dagster.spec.reading import Limit, read_yaml
from upstream_dagster.warehouse.names import in_datahub

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
    "set_value",
    "shift_time",
    "late_rows",
    "out_of_order",
    "metadata",
]
_NEEDS_COLUMN = {"rename_column", "drop_column", "null_column", "change_type", "zero_values"}
_NEEDS_COLUMN |= {"scale_values", "set_value"}
# Changes DataHub alone sees: an owner, a description, a tag, a term, a domain.
MetadataAspect = Literal["owner", "description", "tag", "term", "domain"]
MAX_FAULTS = 50  # per occurrence: a scenario breaks a few things at once, never thousands
_TOO_MANY = "a scenario breaks a few things at once: split it into several scenario files"
SCENARIO_LIMITS = tuple(
    Limit(at, MAX_FAULTS, "MAX_FAULTS", "faults", _TOO_MANY)
    for at in (("faults",), ("recurrence", "faults"))
)
_RELATION = r"^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+){1,2}$"
# a column as the warehouse names it: a reserved word, mixed case, a space, a dash, an accent
# (the fault's SQL quotes it); never its quotes, a control character or an edge space
_COLUMN = re.compile(r"^[^\x00-\x1f\x7f\"`\s]([^\x00-\x1f\x7f\"`]*[^\x00-\x1f\x7f\"`\s])?$")


def column_name(text: str, what: str = "column") -> str:
    if not _COLUMN.fullmatch(text):
        raise ValueError(
            f"{what} {text!r}: write the column as the warehouse names it, without quotes, "
            "control characters or spaces at its ends (the fault's SQL quotes it)"
        )
    return text


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Through(_Strict):
    """Rows chosen through another table: those whose ``on`` column matches a row of
    ``relation`` that meets ``where`` (the orders of customers in one country, say)."""

    relation: str = Field(pattern=_RELATION)
    on: str = Field(description="a column of both, or this_column = other_column")
    where: str = Field(description="a SQL condition over the other table's columns")

    @model_validator(mode="after")
    def _valid(self) -> Through:
        join_on(self.on)
        condition(self.where)
        return self

    @property
    def table(self) -> str:
        return ".".join(self.relation.split(".")[-2:])


_NEEDS = {
    "rename_column": ("to",),
    "change_type": ("to",),
    "scale_values": ("factor",),
    "set_value": ("value",),
    "stale": ("hours",),
    "skip_model": ("hours",),
    "shift_time": ("hours",),
    "late_rows": ("hours",),
    "out_of_order": ("days",),
    "metadata": ("aspect", "to"),
}


class Fault(_Strict):
    kind: FaultKind
    relation: str = Field(pattern=_RELATION)
    column: str | None = Field(default=None, max_length=128, description="as the table names it")
    to: str | None = Field(
        default=None, description="new name (rename), type (change_type), metadata value"
    )
    value: str | None = Field(default=None, description="a set_value's SQL value or expression")
    fraction: float | None = Field(default=None, gt=0, le=1)
    factor: float | None = Field(default=None, allow_inf_nan=False, ge=-1e6, le=1e6)
    hours: float | None = Field(
        default=None, ge=-24 * 366 * 10, le=24 * 366 * 10, allow_inf_nan=False
    )
    days: int | None = Field(default=None, ge=1, le=3660, description="the last N days' rows")
    where: str | None = Field(default=None, description="a SQL condition selecting rows")
    through: Through | None = None
    aspect: MetadataAspect | None = Field(default=None, description="what a metadata change sets")

    @model_validator(mode="after")
    def _complete(self) -> Fault:
        missing = [n for n in _NEEDS.get(self.kind, ()) if getattr(self, n) is None]
        if self.kind in _NEEDS_COLUMN and not self.column:
            missing.insert(0, "column")
        if missing:
            raise ValueError(f"a {self.kind} fault needs {', '.join(missing)}")
        if self.hours is not None and self.hours <= 0 and self.kind != "shift_time":
            raise ValueError(f"a {self.kind} fault's hours must be more than 0")
        if self.hours == 0:
            raise ValueError("a shift_time of 0 hours changes nothing: give it hours (+ or -)")
        if self.column is not None:
            column_name(self.column)
        if self.kind == "rename_column" and self.to:
            column_name(self.to, "rename target")
        if self.kind == "change_type" and self.to:
            sql_type(self.to)
        if self.value is not None:
            value(self.value)
        if self.where is not None:
            condition(self.where)
        if self.kind == "metadata" and (self.where or self.through or self.fraction or self.days):
            raise ValueError("a metadata fault changes DataHub only: it selects no rows")
        return self

    @property
    def sql_type(self) -> str:
        """A change_type's target as SQL, rendered by sqlglot from the parsed type (the text of
        the file is never pasted into a statement)."""
        return sql_type(self.to or "")

    @property
    def sql_value(self) -> str:
        """A set_value's value as SQL, rendered by sqlglot from the parsed expression."""
        return value(self.value or "NULL")

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


class Flaky(_Strict):
    """A check that reports one failure with no change in the data (a timeout, a lost
    connection): an estate.yaml monitor or a dbt test, on one dataset when it checks several."""

    check: str = Field(description="an estate.yaml monitor's name, or a dbt test's name")
    dataset: str | None = Field(default=None, description="schema.table, when it checks several")
    column: str | None = Field(default=None, description="the column, when it checks several")


class Occurrence(_Strict):
    """A later occurrence: what is left out is the first occurrence's."""

    faults: list[Fault] | None = Field(default=None, max_length=MAX_FAULTS)
    flaky: list[str | Flaky] | None = None
    trigger: Trigger | None = None
    expect: Expect | None = None


class Scenario(_Strict):
    name: str
    description: str = ""
    faults: list[Fault] = Field(default_factory=list, max_length=MAX_FAULTS)
    flaky: list[str | Flaky] = Field(
        default_factory=list,
        description="checks (monitor or dbt test names) whose next run reports a failure with "
        "no change in the data",
    )
    trigger: Trigger | None = None
    expect: Expect
    estate: str | None = Field(
        default=None,
        description="the estate the case runs on: 'demo', a folder under evals/estates, or a "
        "path to a folder holding estate.yaml and dbt/ (unset: the configured estate)",
        pattern=r"^[A-Za-z0-9_./-]+$",
    )
    warn: list[str] = Field(
        default_factory=list,
        description="dbt tests (by the name dbt gives them) whose severity is warn: a failure "
        "is reported and the build goes on",
    )
    started_days_ago: int | None = Field(
        default=None,
        ge=1,
        le=14,
        description="the faults landed this many daily builds before the one graded; the "
        "builds in between ran every check as usual",
    )
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
    def flaky_checks(self) -> list[Flaky]:
        """Each flaky entry as a check, on the trigger's dataset when it names none."""
        out = []
        for item in self.flaky:
            f = Flaky(check=item) if isinstance(item, str) else item
            if f.dataset is None and self.trigger and self.trigger.check == f.check:
                f = f.model_copy(update={"dataset": self.trigger.dataset})
            out.append(f)
        return out

    def named_as_in_datahub(self, renamed: Mapping[str, str]) -> Scenario:
        """The case with each dataset it grades by (trigger, symptom, root cause, flaky checks)
        named as DataHub names it where the case wrote the warehouse's table: a dbt source
        with ``identifier: fuel_txn_raw`` is ``fuel_events`` in DataHub. ``renamed`` maps
        DataHub's ``schema.table`` to the warehouse's; faults keep the warehouse's names."""

        def walk(node: Any, key: str = "") -> Any:
            if isinstance(node, dict):
                return {k: v if k == "faults" else walk(v, k) for k, v in node.items()}
            if isinstance(node, list):
                return [walk(v, key) for v in node]
            if key in ("dataset", "symptom") and isinstance(node, str):
                return in_datahub(node, renamed)
            return node

        return Scenario.model_validate(walk(self.model_dump(exclude_unset=True)))

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
