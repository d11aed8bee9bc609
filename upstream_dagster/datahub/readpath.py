"""The read path: nine slices of DataHub assembled into one `MetadataContext`.

Slices: asset search, lineage, assertions, schema fields (with the fields' own documentation),
governance (structured properties, domains, tags and incident health), glossary, documentation
(with the SQL that builds an asset), surroundings (containers and data jobs), ownership. Each
slice records the transport that answered it and how many calls it took; a slice that had to
fall back says so in its report and in the log. Reads are batched: the call count does not
grow with the estate.
"""

from __future__ import annotations

import logging
import sys
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from upstream_dagster.conformance.context import (
    AssertionFact,
    IncidentFact,
    MetadataContext,
    SliceReport,
)
from upstream_dagster.datahub.assemble import Raw, assemble, referenced
from upstream_dagster.datahub.assertions import (
    assertee,
    assertion_column,
    loaded_ms,
    process_runs,
)
from upstream_dagster.datahub.model import SearchQuery
from upstream_dagster.datahub.protocol import MetadataGraph
from upstream_dagster.datahub.schema_slim import read_schemas
from upstream_dagster.datahub.signals import is_build_check
from upstream_dagster.datahub.surroundings import read_field_documentation, read_surroundings
from upstream_dagster.spec.urns import (
    entity_type,
)

log = logging.getLogger(__name__)
CONSUMER_TYPES = ("dashboard", "chart")


def _slice(
    raw: Raw,
    graph: MetadataGraph,
    name: str,
    fn: Callable[[], int | tuple[int, str | None]],
    empty_reason: str,
) -> None:
    """Run one slice; ``fn`` returns how many items it read, and with them any fallback."""
    before = graph.counter.calls
    answer = fn()
    items, fallback = answer if isinstance(answer, tuple) else (answer, None)
    if fallback:
        log.warning("slice %s fell back: %s", name, fallback)
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


def _read_names(raw: Raw, graph: MetadataGraph, keys: tuple[str, ...]) -> int:
    """Display names of the entities the assets reference under ``keys`` (one batched read
    per entity kind)."""
    urns = sorted(
        {
            u
            for aspects in [*raw.aspects.values(), *raw.around.values()]
            for key in keys
            for u in referenced(aspects, key)
            if u.startswith("urn:li:") and u not in raw.names and u not in raw.asked
        }
    )
    raw.asked.update(urns)  # an entity without a name is not asked again
    by_kind: dict[str, list[str]] = defaultdict(list)
    for urn in urns:
        by_kind[entity_type(urn)].append(urn)
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


def _read_aspects(raw: Raw, graph: MetadataGraph, names: list[str]) -> int:
    found = graph.get_aspects(raw.urns, names)
    for urn, aspects in found.items():
        raw.aspects[urn].pack(aspects)
    return sum(1 for a in found.values() for n in names if n in a)


def read_context(graph: MetadataGraph, as_of_ms: int) -> MetadataContext:
    raw = Raw()
    edges: list[Any] = []
    assertions: dict[str, list[AssertionFact]] = defaultdict(list)
    incidents: dict[str, list[IncidentFact]] = defaultdict(list)
    runs_by_output: dict[str, tuple[int, str]] = {}

    def search() -> int:
        for kind in ("dataset", *CONSUMER_TYPES):
            # interned: lineage, scope and checks then name an asset by this one string
            raw.urns.extend(map(sys.intern, graph.search(SearchQuery(entity_type=kind))))
        return len(raw.urns)

    def lineage() -> tuple[int, str | None]:
        found = graph.lineage_edges()
        edges.extend(found)
        return len(edges), found.fallback

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

    def schema_fields() -> int:
        n = read_schemas(graph, raw.urns, raw.aspects)
        return n + read_field_documentation(raw, graph)

    def around() -> int:
        n = read_surroundings(raw, graph, edges)
        _read_names(raw, graph, ("domains",))
        return n

    _slice(raw, graph, "schema_fields", schema_fields, "no schemaMetadata on any asset")
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
                "viewProperties",
                "container",
                "documentation",
            ],
        ),
        "no documentation aspects",
    )
    _slice(raw, graph, "surroundings", around, "no containers or data jobs around the assets")
    _slice(raw, graph, "ownership", ownership, "no owners anywhere in the graph")
    return assemble(raw, edges, assertions, incidents, runs_by_output, as_of_ms, graph.transport)


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
        if not info or is_build_check(urn):
            continue  # a build check says the model ran, not that its data is right
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
        loaded = loaded_ms(dict(run.native)) if run else None
        if loaded:
            _note(runs_by_output, entity, loaded, "dbt source freshness (max loaded_at)")
    for output, ts in process_runs(graph):
        _note(runs_by_output, output, ts, "last successful dbt run")
    return len(urns)


def _note(store: dict[str, tuple[int, str]], urn: str, ts: int, source: str) -> None:
    if ts > store.get(urn, (0, ""))[0]:
        store[urn] = (ts, source)


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
