"""`MetadataContext`: every fact the core reasons over, read once from DataHub.

Frozen and plain, so the same context gives the same score on every machine, and a what-if copy
is one ``dataclasses.replace`` away. A dbt node and its warehouse table are one asset, named by
the dbt entity; ``twins`` lists every URN it was read from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple


class Column(NamedTuple):
    """A schema field. A tuple, not a dataclass: estates have hundreds of thousands of them."""

    path: str
    native_type: str = ""
    description: str = ""
    terms: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class AssertionFact:
    urn: str
    kind: str  # e.g. "dbt", "dbt Freshness", or the assertion type
    column: str | None = None
    last_result: str | None = None  # SUCCESS | FAILURE | ERROR, None when never run
    last_run_ms: int | None = None


@dataclass(frozen=True)
class IncidentFact:
    urn: str
    state: str  # ACTIVE | RESOLVED
    created_ms: int
    incident_type: str = ""
    title: str = ""


@dataclass(frozen=True)
class AssetFacts:
    urn: str
    entity_type: str = "dataset"
    platform: str = ""
    name: str = ""
    twins: tuple[str, ...] = ()
    subtypes: tuple[str, ...] = ()
    description: str = ""
    columns: tuple[Column, ...] = ()
    owners: tuple[str, ...] = ()
    domains: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    terms: tuple[str, ...] = ()
    structured_properties: tuple[tuple[str, tuple[str, ...]], ...] = ()
    assertions: tuple[AssertionFact, ...] = ()
    incidents: tuple[IncidentFact, ...] = ()
    last_updated_ms: int | None = None
    last_updated_source: str = ""
    upstreams: tuple[str, ...] = ()
    downstreams: tuple[str, ...] = ()
    properties: tuple[tuple[str, str], ...] = ()

    @property
    def short_name(self) -> str:
        return self.name.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class SliceReport:
    """Which transport answered a slice, how many calls it took, and any fallback or gap."""

    name: str
    transport: str
    calls: int
    items: int
    fallback: str | None = None
    note: str = ""


@dataclass(frozen=True)
class MetadataContext:
    as_of_ms: int
    transport: str
    assets: tuple[AssetFacts, ...]
    slices: tuple[SliceReport, ...] = ()
    column_edges: tuple[tuple[str, str], ...] = field(default=())

    @cached_property
    def by_urn(self) -> Mapping[str, AssetFacts]:
        return {a.urn: a for a in self.assets}

    @cached_property
    def primary_of(self) -> Mapping[str, str]:
        """Any URN an asset was read from (twins included) -> the asset's URN."""
        out: dict[str, str] = {}
        for asset in self.assets:
            for urn in (asset.urn, *asset.twins):
                out[urn] = asset.urn
        return out

    def datasets(self) -> tuple[AssetFacts, ...]:
        return tuple(a for a in self.assets if a.entity_type == "dataset")

    @property
    def calls(self) -> int:
        return sum(s.calls for s in self.slices)
