"""The records a node's health is judged from: what DataHub recorded about it (schema events,
profiles, its checks' runs, its code) and the window that bounds an incident. Plain data."""

from __future__ import annotations

from dataclasses import dataclass

# DataHub learns of a change when metadata is ingested, which in the same build can come a few
# minutes after the check that noticed the symptom.
GRACE_MS = 15 * 60 * 1000


@dataclass(frozen=True)
class Window:
    last_good_ms: int  # the last time the symptom's check passed (0: never)
    symptom_ms: int

    def holds(self, ts: int | None) -> bool:
        return ts is not None and self.last_good_ms < ts <= self.symptom_ms + GRACE_MS


@dataclass(frozen=True)
class FailingCheck:
    assertion: str
    description: str
    column: str | None
    at_ms: int
    message: str = ""
    freshness: bool = False
    # What the check tests, where known: a dbt test's kind (not_null, unique, relationships,
    # accepted_values), an estate.yaml monitor's rule, "build" for a model's build, "" unknown.
    kind: str = ""


@dataclass(frozen=True)
class SchemaEvent:
    at_ms: int
    operation: str  # ADD | REMOVE | MODIFY
    column: str
    native_type: str = ""
    old_column: str | None = None  # set on a MODIFY that DataHub itself reported as a rename
    old_type: str = ""  # the type before, on a MODIFY of a type, where the event carries it


@dataclass(frozen=True)
class ColumnProfile:
    null_share: float
    mean: float | None = None
    maximum: str | None = None
    distinct: int | None = None  # distinct values (estimated), where the profile counts them
    values: tuple[tuple[str, int], ...] = ()  # a categorical column's value frequencies
    minimum: str | None = None


@dataclass(frozen=True)
class Profile:
    at_ms: int
    rows: int
    columns: tuple[tuple[str, ColumnProfile], ...]
    partition: str = (
        ""  # "" the whole table, else the day's partition, e.g. "order_date=2026-11-28"
    )

    @property
    def kind(self) -> str:
        return "day" if self.partition else ""

    def column(self, name: str) -> ColumnProfile | None:
        return dict(self.columns).get(name)


@dataclass(frozen=True)
class CheckRun:
    """One run of one of a node's checks, as DataHub recorded it."""

    assertion: str
    at_ms: int
    passed: bool
    message: str = ""
    observed: str = ""  # what the check measured, where it says


@dataclass(frozen=True)
class NodeView:
    urn: str
    name: str
    failing: tuple[FailingCheck, ...] = ()
    schema: tuple[SchemaEvent, ...] = ()
    profiles: tuple[Profile, ...] = ()  # oldest first
    last_run_ms: int | None = None
    runs: tuple[CheckRun, ...] = ()  # every recorded run of the node's checks, oldest first
    code: tuple[tuple[int, str], ...] = ()  # (when, the model's own code), oldest first
    compiled: str = ""  # the model's compiled SQL as DataHub holds it now ("" for a feed)

    @property
    def is_model(self) -> bool:
        """A node with code of its own (a dbt model); a feed is loaded by something else."""
        return bool(self.code or self.compiled)
