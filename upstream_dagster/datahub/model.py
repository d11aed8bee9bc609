"""Plain, frozen records that cross the gateway. No SDK types leave `upstream_dagster.datahub`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, TypeVar, overload

Json = dict[str, Any]
# What a read keeps of each aspect as it is decoded: (aspect name, value) -> the value kept
Shape = Callable[[str, Json], Json]
T = TypeVar("T")
# A custom assertion upserted on a GMS keeps only type, entity, field and logic: Upstream's own
# keys then travel on one line of the logic, after this prefix.
PROPERTIES_PREFIX = "upstream-properties: "


def assertion_properties(info: Json) -> dict[str, str]:
    """An assertion's customProperties, or on a GMS the ones carried in its logic."""
    import json

    props = {str(k): str(v) for k, v in (info.get("customProperties") or {}).items()}
    logic = str((info.get("customAssertion") or {}).get("logic") or "")
    for line in logic.splitlines():
        if line.startswith(PROPERTIES_PREFIX):
            carried = json.loads(line[len(PROPERTIES_PREFIX) :])
            props = {**{str(k): str(v) for k, v in carried.items()}, **props}
    return props


@dataclass(frozen=True)
class AspectVersion:
    """One stored version of an aspect: version 1 is the first write, the highest is the latest."""

    version: int
    created_ms: int
    value: Json


@dataclass(frozen=True, slots=True)
class ColumnEdge:
    upstream_field: str  # schemaField URN
    downstream_field: str  # schemaField URN


@dataclass(frozen=True, slots=True)
class LineageEdge:
    """``upstream`` feeds ``downstream``. ``via`` names the aspect the edge was read from."""

    upstream: str
    downstream: str
    via: str
    kind: str = "TRANSFORMED"
    columns: tuple[ColumnEdge, ...] = ()


@dataclass(frozen=True)
class ChangeEvent:
    """One change, in the shape of DataHub's Timeline API ``ChangeEvent``."""

    entity_urn: str
    category: str  # TECHNICAL_SCHEMA | DOCUMENTATION | OWNERSHIP | TAG | GLOSSARY_TERM
    operation: str  # ADD | MODIFY | REMOVE
    modifier: str | None
    parameters: Json
    description: str
    timestamp_ms: int

    def as_json(self) -> Json:
        return {
            "entityUrn": self.entity_urn,
            "category": self.category,
            "operation": self.operation,
            "modifier": self.modifier,
            "parameters": self.parameters,
            "auditStamp": {"time": self.timestamp_ms, "actor": "urn:li:corpuser:datahub"},
            "description": self.description,
        }


@dataclass(frozen=True)
class Transaction:
    """A group of change events written at one instant (Timeline API ``ChangeTransaction``)."""

    timestamp_ms: int
    sem_ver: str
    sem_ver_change: str  # MAJOR | MINOR | PATCH | NONE
    version_stamp: str
    events: tuple[ChangeEvent, ...]
    actor: str = "urn:li:corpuser:datahub"


@dataclass(frozen=True)
class AssertionRun:
    """One assertion run event, as DataHub's ``assertionRunEvent`` timeseries aspect holds it."""

    assertion_urn: str
    asserted_urn: str
    timestamp_ms: int
    result: str  # SUCCESS | FAILURE | ERROR
    run_id: str = ""
    native: tuple[tuple[str, str], ...] = ()  # nativeResults, e.g. dbt freshness max_loaded_at


@dataclass(frozen=True)
class Answer(Generic[T]):
    """A read's items and, when the backend could not answer exactly what was asked, why
    (a fallback is data the caller reports, never state left on the graph). Iterates, sizes and
    indexes as its items."""

    items: tuple[T, ...]
    fallback: str | None = None

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[T, ...]: ...

    def __getitem__(self, index: int | slice) -> T | tuple[T, ...]:
        return self.items[index]


Lineage = Answer[LineageEdge]
History = Answer[AspectVersion]


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do beyond the contract every backend honours. Callers ask these
    flags; nothing probes a graph object for methods."""

    # An intended change travels as a server-side PATCH (only the change, nobody's other
    # values); without it a change is applied as read-modify-write of the whole aspect.
    patches: bool
    # An aspect can be removed again (the undo of a write that created it).
    deletes_aspects: bool
    # Every version of an aspect is kept with its time and read for a node in one request; a
    # backend without it answers schema changes from its timeline instead.
    aspect_versions: bool
    # Lineage is answered as it stood at a past instant, not only as it is now.
    lineage_as_of: bool


LITE = Capabilities(patches=False, deletes_aspects=True, aspect_versions=True, lineage_as_of=True)
GMS = Capabilities(patches=True, deletes_aspects=False, aspect_versions=False, lineage_as_of=False)


@dataclass(frozen=True)
class Receipt:
    """What a write did: which aspect of which URN, or why nothing was written."""

    urn: str
    aspect: str
    written: bool
    detail: str = ""


@dataclass(frozen=True)
class PreImage:
    """An aspect as it was before a write: what undo restores."""

    urn: str
    aspect: str
    value: Json | None  # None: the aspect did not exist before the write

    def as_json(self) -> Json:
        return {"urn": self.urn, "aspect": self.aspect, "value": self.value}

    @classmethod
    def from_json(cls, raw: Json) -> PreImage:
        return cls(str(raw["urn"]), str(raw["aspect"]), raw.get("value"))


class Written(NamedTuple):
    """Every write's result: its receipt and the pre-image recorded before it."""

    receipt: Receipt
    pre_image: PreImage


@dataclass(frozen=True)
class SearchQuery:
    """Keys are ANDed. Lists inside one key are ORed. ``names`` are globs over dataset names."""

    entity_type: str = "dataset"
    platforms: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    domains: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    terms: tuple[str, ...] = ()
    owners: tuple[str, ...] = ()
    urns: tuple[str, ...] = ()


@dataclass
class CallCounter:
    """DataHub calls made: one SQL statement on `lite`, one HTTP request on `gms`."""

    calls: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)

    def add(self, kind: str, n: int = 1) -> None:
        self.calls += n
        self.by_kind[kind] = self.by_kind.get(kind, 0) + n
