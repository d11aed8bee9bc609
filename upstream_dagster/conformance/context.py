"""`MetadataContext`: every fact the core reasons over, read once from DataHub.

Frozen and plain, so the same context gives the same score on every machine, and a what-if copy
is one ``dataclasses.replace`` away. A dbt node and its warehouse table are one asset, named by
the dbt entity; ``twins`` lists every URN it was read from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple, overload

from upstream_dagster.spec.urns import display, platform_of, short


class Column(NamedTuple):
    """A schema field. A tuple, not a dataclass: estates have hundreds of thousands of them."""

    path: str
    native_type: str = ""
    description: str = ""
    terms: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()


def _ids(block: Any, key: str, item: str) -> list[str]:
    return [x[item] for x in block.get(key, ())] if block else []


class LazyColumns(Sequence[Column]):
    """An asset's columns, built from DataHub's schema fields only when first read.

    Estates hold hundreds of thousands of columns and the dial reads few of them; building every
    Column up front was most of the read path's own cost. Holds plain JSON, so it pickles.
    """

    def __init__(
        self,
        fields: tuple[Any, ...],
        editable: tuple[Any, ...] = (),
        documented: tuple[tuple[str, str], ...] = (),
    ) -> None:
        # ``documented``: (field path, text) of a schemaField's own documentation aspect (what
        # DataHub's documentation propagation writes), read when the schema holds no text
        self._fields, self._editable, self._documented = fields, editable, documented
        self._built: tuple[Column, ...] | None = None

    def _build(self) -> tuple[Column, ...]:
        if self._built is None:
            edits = {e["fieldPath"]: e for e in self._editable}
            docs = dict(self._documented)
            out = []
            for f in self._fields:
                e = edits.get(f["fieldPath"], {})
                terms = _ids(f.get("glossaryTerms"), "terms", "urn") + _ids(
                    e.get("glossaryTerms"), "terms", "urn"
                )
                tags = _ids(f.get("globalTags"), "tags", "tag") + _ids(
                    e.get("globalTags"), "tags", "tag"
                )
                out.append(
                    Column(
                        f["fieldPath"],
                        f.get("nativeDataType", ""),
                        e.get("description")
                        or f.get("description")
                        or docs.get(f["fieldPath"], ""),
                        tuple(sorted(set(terms))),
                        tuple(sorted(set(tags))),
                    )
                )
            self._built = tuple(out)
        return self._built

    def __len__(self) -> int:
        return len(self._fields)

    @overload
    def __getitem__(self, index: int) -> Column: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Column]: ...

    def __getitem__(self, index: int | slice) -> Column | Sequence[Column]:
        return self._build()[index]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash(self._build())

    def __repr__(self) -> str:
        return f"LazyColumns({len(self)} fields)"


@dataclass(frozen=True, slots=True)
class AssertionFact:
    urn: str
    kind: str  # e.g. "dbt", "dbt Freshness", or the assertion type
    column: str | None = None
    last_result: str | None = None  # SUCCESS | FAILURE | ERROR, None when never run
    last_run_ms: int | None = None


@dataclass(frozen=True, slots=True)
class IncidentFact:
    urn: str
    state: str  # ACTIVE | RESOLVED
    created_ms: int
    incident_type: str = ""
    title: str = ""


@dataclass(frozen=True)
class FaultTrial:
    """One seeded fault tried in a sandbox copy of the warehouse (`upstream detect`), and the
    checks that fired on it: none is a fault nobody would notice."""

    fault: str  # what was broken, e.g. "null_column on shop.orders.amount (30% of rows)"
    relation: str  # the relation faulted: the asset itself or one of its feeds
    kind: str
    caught_by: tuple[str, ...] = ()
    # for a fault nothing caught: the assertion templates that, on the asset itself, failed
    # after it and passed on the clean copy (what a proposal would add, priced by the same run)
    would_catch: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AssetFacts:
    urn: str
    entity_type: str = "dataset"
    platform: str = ""
    name: str = ""
    twins: tuple[str, ...] = ()
    subtypes: tuple[str, ...] = ()
    description: str = ""
    columns: Sequence[Column] = ()
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
    owner_types: tuple[tuple[str, str], ...] = ()  # (owner, how it owns: DATAOWNER, ...)
    display_name: str = ""  # the name DataHub shows (datasetProperties.name, a title)
    container: str = ""  # the platform container it sits in (a schema, folder, workspace)
    sql: str = ""  # the SQL that builds it (viewProperties), when DataHub holds it
    jobs: tuple[str, ...] = ()  # the data jobs that read or write it
    # The faults `upstream detect` tried on it and its feeds; None: never measured
    fault_trials: tuple[FaultTrial, ...] | None = None

    @property
    def short_name(self) -> str:
        return self.name.rsplit(".", 1)[-1]

    @property
    def label(self) -> str:
        """What a reviewer recognises: DataHub's display name and the platform, so a dbt
        model and its warehouse table never read as duplicates."""
        name = self.display_name or self.short_name or short(self.urn).rsplit(".", 1)[-1]
        platform = self.platform or platform_of(self.urn)
        return f"{name} ({platform})" if platform else name


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
    # Display names DataHub holds for the owners, groups, domains, terms and tags assets
    # reference (corpUserInfo, corpGroupInfo, domainProperties, glossaryTermInfo, tagProperties)
    names: tuple[tuple[str, str], ...] = field(default=())
    # Containers and data jobs the assets sit in or are moved by: read as evidence (their
    # owners, domains, names), never scored
    around: tuple[AssetFacts, ...] = field(default=())

    @cached_property
    def by_urn(self) -> Mapping[str, AssetFacts]:
        return {a.urn: a for a in self.assets}

    @cached_property
    def around_by_urn(self) -> Mapping[str, AssetFacts]:
        return {a.urn: a for a in self.around}

    @cached_property
    def name_of(self) -> Mapping[str, str]:
        return dict(self.names)

    def display(self, urn: str) -> str:
        """What a person calls ``urn``: DataHub's display name, else the URN's readable tail."""
        return display(urn, self.name_of)

    def label(self, urn: str) -> str:
        """An asset as a reviewer recognises it: display name and platform."""
        asset = self.by_urn.get(urn)
        return asset.label if asset is not None else display(urn, self.name_of)

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
