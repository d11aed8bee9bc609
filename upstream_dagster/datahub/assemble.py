"""The read slices assembled into assets: a dbt node and its warehouse twin become one asset
(named by the dbt entity), lineage and column edges are re-rooted onto it, freshness is the
newest of what DataHub records about it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from upstream_dagster.conformance.context import (
    AssertionFact,
    AssetFacts,
    Column,
    IncidentFact,
    LazyColumns,
    MetadataContext,
    SliceReport,
)
from upstream_dagster.datahub.model import Json
from upstream_dagster.spec.urns import (
    dataset_name,
    entity_type,
    field_dataset,
    field_path,
    platform_of,
)


@dataclass
class Raw:
    """What the slices read: the asset URNs, their aspects, slice reports, display names."""

    urns: list[str] = field(default_factory=list)
    aspects: dict[str, dict[str, Json]] = field(default_factory=lambda: defaultdict(dict))
    slices: list[SliceReport] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)


def referenced(aspects: dict[str, Json], key: str) -> list[str]:
    """The owners, domains, terms or tags an asset's aspects name, as URNs."""
    if key == "owners":
        return [o["owner"] for o in (aspects.get("ownership") or {}).get("owners", [])]
    if key == "domains":
        return list((aspects.get("domains") or {}).get("domains", []))
    if key == "terms":
        return [t["urn"] for t in (aspects.get("glossaryTerms") or {}).get("terms", [])]
    return [t["tag"] for t in (aspects.get("globalTags") or {}).get("tags", [])]


def owner_type(owner: Json) -> str:
    """How an owner owns: the custom ownership type's name when set, else the built-in type."""
    custom = str(owner.get("typeUrn") or "")
    if custom:
        return custom.rsplit(":", 1)[-1].removeprefix("__system__").strip("_") or custom
    return str(owner.get("type") or "NONE")


def _primaries(raw: Raw) -> dict[str, str]:
    """Secondary twin -> primary (the dbt entity), from the siblings aspects."""
    out: dict[str, str] = {}
    for urn in raw.urns:
        sib = raw.aspects.get(urn, {}).get("siblings")
        if sib and not sib.get("primary", False) and sib.get("siblings"):
            out[urn] = str(sib["siblings"][0])
    return out


def _columns(aspects: Json) -> Sequence[Column]:
    fields = (aspects.get("schemaMetadata") or {}).get("fields") or ()
    editable = (aspects.get("editableSchemaMetadata") or {}).get("editableSchemaFieldInfo") or ()
    return LazyColumns(tuple(fields), tuple(editable)) if fields else ()


def _union(values: Iterable[Iterable[str]]) -> tuple[str, ...]:
    return tuple(sorted({v for group in values for v in group}))


def _facts_of(urn: str, a: Json) -> dict[str, Any]:
    props = a.get("datasetProperties") or {}
    info = a.get("dashboardInfo") or a.get("chartInfo") or {}
    description = (
        (a.get("editableDatasetProperties") or {}).get("description")
        or props.get("description")
        or info.get("description")
        or ""
    )
    structured = tuple(
        sorted(
            (str(p["propertyUrn"]), tuple(str(next(iter(v.values()))) for v in p.get("values", [])))
            for p in (a.get("structuredProperties") or {}).get("properties", [])
        )
    )
    updated = max(
        [
            int((a.get("operation") or {}).get("lastUpdatedTimestamp", 0)),
            int((props.get("lastModified") or {}).get("time", 0)),
        ]
    )
    return {
        "description": str(description).strip(),
        **{key: referenced(a, key) for key in ("owners", "domains", "tags", "terms")},
        "subtypes": list((a.get("subTypes") or {}).get("typeNames", [])),
        "structured": structured,
        "columns": _columns(a),
        "updated": updated,
        "title": str(info.get("title") or ""),
        "display": str(props.get("name") or info.get("title") or ""),
        "owner_types": tuple(
            sorted(
                (str(o["owner"]), owner_type(o))
                for o in (a.get("ownership") or {}).get("owners", [])
            )
        ),
        "properties": tuple(
            sorted((str(k), str(v)) for k, v in (props.get("customProperties") or {}).items())
        ),
    }


def assemble(
    raw: Raw,
    edges: list[Any],
    assertions: dict[str, list[AssertionFact]],
    incidents: dict[str, list[IncidentFact]],
    runs_by_output: dict[str, tuple[int, str]],
    as_of_ms: int,
    transport: str,
) -> MetadataContext:
    secondary = _primaries(raw)
    # primary -> every URN read for it, the primary first
    groups: dict[str, dict[str, None]] = {}
    for urn in dict.fromkeys(raw.urns):
        primary = secondary.get(urn, urn)
        groups.setdefault(primary, {primary: None})[urn] = None
    for urn, primary in secondary.items():
        groups.setdefault(primary, {primary: None})[urn] = None

    def prime(urn: str) -> str:
        return secondary.get(urn, urn)

    ups: dict[str, set[str]] = defaultdict(set)
    downs: dict[str, set[str]] = defaultdict(set)
    column_edges: set[tuple[str, str]] = set()
    for e in edges:
        up, down = prime(e.upstream), prime(e.downstream)
        if up != down:
            ups[down].add(up)
            downs[up].add(down)
        for c in e.columns:
            column_edges.add((_reroot(c.upstream_field, prime), _reroot(c.downstream_field, prime)))

    assets = []
    empty: Json = {}
    for primary, group in sorted(groups.items()):
        members = list(group)
        facts = [_facts_of(u, raw.aspects.get(u, empty)) for u in members]
        main = facts[0]
        columns = main["columns"] or next((f["columns"] for f in facts if f["columns"]), ())
        fresh = [runs_by_output[u] for u in members if u in runs_by_output]
        fresh += [(f["updated"], "DataHub lastModified/operation") for f in facts if f["updated"]]
        last = max(fresh) if fresh else (None, "")
        kind = entity_type(primary)
        assets.append(
            AssetFacts(
                urn=primary,
                entity_type=kind,
                platform=platform_of(primary),
                name=main["title"] or dataset_name(primary),
                twins=tuple(members[1:]),
                subtypes=_union(f["subtypes"] for f in facts),
                description=main["description"]
                or next((f["description"] for f in facts if f["description"]), ""),
                columns=columns,
                owners=_union(f["owners"] for f in facts),
                owner_types=tuple(sorted({t for f in facts for t in f["owner_types"]})),
                display_name=main["display"]
                or next((f["display"] for f in facts if f["display"]), ""),
                domains=_union(f["domains"] for f in facts),
                tags=_union(f["tags"] for f in facts),
                terms=_union(f["terms"] for f in facts),
                structured_properties=main["structured"]
                or next((f["structured"] for f in facts if f["structured"]), ()),
                assertions=tuple(
                    sorted({a for u in members for a in assertions.get(u, ())}, key=lambda a: a.urn)
                ),
                incidents=tuple(
                    sorted({i for u in members for i in incidents.get(u, ())}, key=lambda i: i.urn)
                ),
                last_updated_ms=last[0],
                last_updated_source=last[1],
                upstreams=tuple(sorted(ups.get(primary, ()))),
                downstreams=tuple(sorted(downs.get(primary, ()))),
                properties=main["properties"],
            )
        )
    return MetadataContext(
        as_of_ms=as_of_ms,
        transport=transport,
        assets=tuple(assets),
        slices=tuple(raw.slices),
        column_edges=tuple(sorted(column_edges)),
        names=tuple(sorted(raw.names.items())),
    )


def _reroot(field_urn: str, prime: Callable[[str], str]) -> str:
    dataset = field_dataset(field_urn)
    if not dataset:
        return field_urn
    return f"urn:li:schemaField:({prime(dataset)},{field_path(field_urn)})"
