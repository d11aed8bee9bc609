"""The read path: eight slices of DataHub assembled into one `MetadataContext`.

Slices: asset search, lineage, assertions, schema fields, governance (structured properties,
domains, tags and incident health), glossary, documentation, ownership. Each slice records the
transport that answered it and how many calls it took; a slice that had to fall back says so in
its report and in the log. Reads are batched: the call count does not grow with the estate.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
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
from upstream_dagster.datahub.edges import field_dataset, field_path
from upstream_dagster.datahub.model import Json, SearchQuery
from upstream_dagster.datahub.protocol import MetadataGraph
from upstream_dagster.spec.urns import dataset_name, platform_of

log = logging.getLogger(__name__)
CONSUMER_TYPES = ("dashboard", "chart")


@dataclass
class _Raw:
    urns: list[str] = field(default_factory=list)
    aspects: dict[str, dict[str, Json]] = field(default_factory=lambda: defaultdict(dict))
    slices: list[SliceReport] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)


def _slice(
    raw: _Raw, graph: MetadataGraph, name: str, fn: Callable[[], int], empty_reason: str
) -> None:
    before = graph.counter.calls
    items = fn()
    fallback = getattr(graph, "last_fallback", None)
    if fallback:
        log.warning("slice %s fell back: %s", name, fallback)
        graph.last_fallback = None  # type: ignore[attr-defined]
    raw.slices.append(
        SliceReport(
            name,
            graph.transport,
            graph.counter.calls - before,
            items,
            fallback,
            "" if items else empty_reason,
        )
    )


# Where DataHub keeps the name a person knows an entity by, most specific first.
NAME_ASPECTS: dict[str, tuple[tuple[str, str], ...]] = {
    "corpuser": (
        ("corpUserEditableInfo", "displayName"),
        ("corpUserInfo", "displayName"),
        ("corpUserInfo", "fullName"),
    ),
    "corpGroup": (("corpGroupInfo", "displayName"),),
    "domain": (("domainProperties", "name"),),
    "glossaryTerm": (("glossaryTermInfo", "name"),),
    "tag": (("tagProperties", "name"),),
}


def _read_names(raw: _Raw, graph: MetadataGraph, keys: tuple[str, ...]) -> int:
    """Display names of the entities the assets reference under ``keys`` (one batched read
    per entity kind)."""
    urns = sorted(
        {
            u
            for aspects in raw.aspects.values()
            for key in keys
            for u in _referenced(aspects, key)
            if u.startswith("urn:li:") and u not in raw.names
        }
    )
    by_kind: dict[str, list[str]] = defaultdict(list)
    for urn in urns:
        by_kind[urn.split(":")[2]].append(urn)
    named = 0
    for kind, group in sorted(by_kind.items()):
        places = NAME_ASPECTS.get(kind, ())
        if not places:
            continue
        # one read per kind: a server checks each aspect name against the entity type
        found = graph.get_aspects(group, sorted({a for a, _ in places}))
        for urn, aspects in found.items():
            for aspect, key in places:
                name = str((aspects.get(aspect) or {}).get(key) or "").strip()
                if name:
                    raw.names[urn] = name
                    named += 1
                    break
    return named


def _referenced(aspects: dict[str, Json], key: str) -> list[str]:
    """The owners, domains, terms or tags an asset's aspects name, as URNs."""
    if key == "owners":
        return [o["owner"] for o in (aspects.get("ownership") or {}).get("owners", [])]
    if key == "domains":
        return list((aspects.get("domains") or {}).get("domains", []))
    if key == "terms":
        return [t["urn"] for t in (aspects.get("glossaryTerms") or {}).get("terms", [])]
    return [t["tag"] for t in (aspects.get("globalTags") or {}).get("tags", [])]


def _read_aspects(raw: _Raw, graph: MetadataGraph, names: list[str]) -> int:
    found = graph.get_aspects(raw.urns, names)
    for urn, aspects in found.items():
        raw.aspects[urn].update(aspects)
    return sum(1 for a in found.values() for n in names if n in a)


def read_context(graph: MetadataGraph, as_of_ms: int) -> MetadataContext:
    raw = _Raw()
    edges: list[Any] = []
    assertions: dict[str, list[AssertionFact]] = defaultdict(list)
    incidents: dict[str, list[IncidentFact]] = defaultdict(list)
    runs_by_output: dict[str, tuple[int, str]] = {}

    def search() -> int:
        for kind in ("dataset", *CONSUMER_TYPES):
            raw.urns.extend(graph.search(SearchQuery(entity_type=kind)))
        return len(raw.urns)

    def lineage() -> int:
        edges.extend(graph.lineage_edges())
        return len(edges)

    def read_assertions() -> int:
        return _assertions(graph, assertions, runs_by_output)

    def governance() -> int:
        n = _read_aspects(raw, graph, ["structuredProperties", "domains", "globalTags", "status"])
        _read_names(raw, graph, ("domains", "tags"))
        return n + _incidents(graph, incidents)

    def glossary() -> int:
        n = _read_aspects(raw, graph, ["glossaryTerms"])
        _read_names(raw, graph, ("terms",))
        return n

    def ownership() -> int:
        n = _read_aspects(raw, graph, ["ownership"])
        _read_names(raw, graph, ("owners",))
        return n

    _slice(raw, graph, "asset_search", search, "DataHub holds no datasets, dashboards or charts")
    _slice(raw, graph, "lineage", lineage, "no lineage aspects in DataHub")
    _slice(raw, graph, "assertions", read_assertions, "no assertions in DataHub")
    _slice(
        raw,
        graph,
        "schema_fields",
        lambda: _read_aspects(raw, graph, ["schemaMetadata", "editableSchemaMetadata"]),
        "no schemaMetadata on any asset",
    )
    _slice(raw, graph, "governance", governance, "no structured properties, domains or tags")
    _slice(raw, graph, "glossary", glossary, "no glossary terms on any asset")
    _slice(
        raw,
        graph,
        "documentation",
        lambda: _read_aspects(
            raw,
            graph,
            [
                "datasetProperties",
                "editableDatasetProperties",
                "subTypes",
                "siblings",
                "dashboardInfo",
                "chartInfo",
                "operation",
            ],
        ),
        "no documentation aspects",
    )
    _slice(raw, graph, "ownership", ownership, "no owners anywhere in the graph")
    return _assemble(raw, edges, assertions, incidents, runs_by_output, as_of_ms, graph.transport)


def _assertions(
    graph: MetadataGraph,
    out: dict[str, list[AssertionFact]],
    runs_by_output: dict[str, tuple[int, str]],
) -> int:
    urns = graph.search(SearchQuery(entity_type="assertion"))
    infos = graph.get_aspects(urns, ["assertionInfo"])
    latest = {r.assertion_urn: r for r in graph.assertion_runs()}
    for urn in urns:
        info = infos.get(urn, {}).get("assertionInfo")
        if not info:
            continue
        custom = info.get("customAssertion") or {}
        entity = custom.get("entity") or assertee(info)
        if not entity:
            continue
        run = latest.get(urn)
        out[entity].append(
            AssertionFact(
                urn=urn,
                kind=str(custom.get("type") or info.get("type", "")),
                column=assertion_column(info),
                last_result=run.result if run else None,
                last_run_ms=run.timestamp_ms if run else None,
            )
        )
        loaded = _loaded_ms(dict(run.native)) if run else None
        if loaded:
            _note(runs_by_output, entity, loaded, "dbt source freshness (max loaded_at)")
    for output, ts in process_runs(graph):
        _note(runs_by_output, output, ts, "last successful dbt run")
    return len(urns)


def _note(store: dict[str, tuple[int, str]], urn: str, ts: int, source: str) -> None:
    if ts > store.get(urn, (0, ""))[0]:
        store[urn] = (ts, source)


def assertion_label(info: Json) -> str:
    """What a person calls an assertion: its description, else the dbt test's name."""
    unique_id = str((info.get("customProperties") or {}).get("dbt_unique_id", ""))
    if info.get("description"):
        return str(info["description"])[:160]
    if unique_id.startswith(("test.", "source.")):
        kind = "dbt test" if unique_id.startswith("test.") else "dbt source freshness"
        return f"{kind} {unique_id.split('.')[2] if unique_id.count('.') >= 2 else unique_id}"
    return str((info.get("customAssertion") or {}).get("type") or "assertion")[:160]


def assertee(info: Json) -> str | None:
    for key in (
        "datasetAssertion",
        "freshnessAssertion",
        "volumeAssertion",
        "fieldAssertion",
        "sqlAssertion",
        "schemaAssertion",
    ):
        block = info.get(key) or {}
        entity = block.get("dataset") or block.get("entity")
        if entity:
            return str(entity)
    return None


def assertion_columns(info: Json) -> list[str]:
    """The columns an assertion checks, wherever its kind keeps them: a custom (dbt) assertion's
    ``field``, a field assertion's ``field.path``, a column-scoped dataset assertion's
    ``fields`` (Great Expectations, older dbt sources). Paths, not schemaField URNs."""
    found: list[str] = []
    custom = info.get("customAssertion") or {}
    if custom.get("field"):
        found.append(field_path(str(custom["field"])))
    block = info.get("fieldAssertion") or {}
    for kind in ("fieldValuesAssertion", "fieldMetricAssertion"):
        path = ((block.get(kind) or {}).get("field") or {}).get("path")
        if path:
            found.append(str(path))
    found += [field_path(str(f)) for f in (info.get("datasetAssertion") or {}).get("fields") or []]
    return list(dict.fromkeys(found))


def assertion_column(info: Json) -> str | None:
    """The one column an assertion checks, or None for a table-level (or multi-column) one."""
    columns = assertion_columns(info)
    return columns[0] if len(columns) == 1 else None


def _loaded_ms(native: dict[str, str]) -> int | None:
    """When a feed's data last arrived, as dbt's freshness check measured it."""
    value = native.get("max_loaded_at")
    if not value:
        return None
    try:
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return int(stamp.timestamp() * 1000)


def process_runs(graph: MetadataGraph) -> Iterable[tuple[str, int]]:
    urns = graph.search(SearchQuery(entity_type="dataProcessInstance"))
    found = graph.get_aspects(urns, ["dataProcessInstanceOutput", "dataProcessInstanceRunEvent"])
    for aspects in found.values():
        event = aspects.get("dataProcessInstanceRunEvent") or {}
        if (event.get("result") or {}).get("type") != "SUCCESS":
            continue
        for output in (aspects.get("dataProcessInstanceOutput") or {}).get("outputs", []):
            yield str(output), int(event.get("timestampMillis", 0))


def _incidents(graph: MetadataGraph, out: dict[str, list[IncidentFact]]) -> int:
    urns = graph.search(SearchQuery(entity_type="incident"))
    infos = graph.get_aspects(urns, ["incidentInfo"])
    for urn in urns:
        info = infos.get(urn, {}).get("incidentInfo")
        if not info:
            continue
        status = info.get("status") or {}
        fact = IncidentFact(
            urn=urn,
            state=str(status.get("state", "ACTIVE")),
            created_ms=int((info.get("created") or {}).get("time", 0)),
            incident_type=str(info.get("type", "")),
            title=str(info.get("title", "")),
        )
        for entity in info.get("entities", []):
            out[str(entity)].append(fact)
    return len(urns)


def _primaries(raw: _Raw) -> dict[str, str]:
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
        **{key: _referenced(a, key) for key in ("owners", "domains", "tags", "terms")},
        "subtypes": list((a.get("subTypes") or {}).get("typeNames", [])),
        "structured": structured,
        "columns": _columns(a),
        "updated": updated,
        "title": str(info.get("title") or ""),
        "properties": tuple(
            sorted((str(k), str(v)) for k, v in (props.get("customProperties") or {}).items())
        ),
    }


def _assemble(
    raw: _Raw,
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
        kind = primary.split(":")[2]
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
