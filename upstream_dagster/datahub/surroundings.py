"""What sits around the assets: the containers they are in (a schema, a bucket folder, a BI
workspace), the data jobs that move data between them, and the schema fields' own
documentation. A steward reads these to name an owner or a domain, or to find text someone
already wrote; none of them is scored."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from itertools import islice
from typing import Any

from upstream_dagster.datahub.assemble import Raw, human_text
from upstream_dagster.datahub.model import Json
from upstream_dagster.datahub.protocol import MetadataGraph
from upstream_dagster.spec.urns import entity_type, field_urn

JOB_ASPECTS = ["dataJobInfo", "ownership", "domains", "dataJobInputOutput"]
CONTAINER_ASPECTS = ["containerProperties", "ownership", "domains", "container"]
FIELD_BATCH = 50_000  # schema fields per documentation read
CONTAINER_DEPTH = 3  # a table's schema, its database, the database's platform instance


def _container_of(aspects: Mapping[str, Json]) -> str:
    return str((aspects.get("container") or {}).get("container") or "")


def read_surroundings(raw: Raw, graph: MetadataGraph, edges: list[Any]) -> int:
    """The data jobs on the lineage edges and the containers of the assets (and theirs, up
    to ``CONTAINER_DEPTH``), one batched read per kind and level, named in ``raw.names``."""
    jobs = sorted(
        {u for e in edges for u in (e.upstream, e.downstream) if entity_type(u) == "dataJob"}
    )
    if jobs:
        raw.around.update(graph.get_aspects(jobs, JOB_ASPECTS))
    level = {_container_of(a) for a in raw.aspects.values()} - {""}
    for _ in range(CONTAINER_DEPTH):
        wanted = sorted(level - set(raw.around))
        if not wanted:
            break
        found = graph.get_aspects(wanted, CONTAINER_ASPECTS)
        raw.around.update(found)
        level = {_container_of(a) for a in found.values()} - {""}
    for urn, aspects in raw.around.items():
        info = aspects.get("dataJobInfo") or aspects.get("containerProperties") or {}
        name = str(info.get("name") or "").strip()
        if name:
            raw.names.setdefault(urn, name)
    return len(raw.around)


def _documented(fields: list[Json], editable: list[Json]) -> set[str]:
    edits = {e.get("fieldPath"): e for e in editable}
    return {
        str(f["fieldPath"])
        for f in fields
        if f.get("description") or (edits.get(f["fieldPath"]) or {}).get("description")
    }


def _undocumented(raw: Raw) -> Iterator[tuple[str, str, str]]:
    """(schemaField URN, dataset, field path) of every field its schema leaves undescribed."""
    for dataset, held in raw.aspects.items():
        fields = (held.get("schemaMetadata") or {}).get("fields") or []
        editable = (held.get("editableSchemaMetadata") or {}).get("editableSchemaFieldInfo")
        done = _documented(fields, editable or [])
        for f in fields:
            path = str(f["fieldPath"])
            if path not in done:
                yield field_urn(dataset, path), dataset, path


def read_field_documentation(raw: Raw, graph: MetadataGraph) -> int:
    """The ``documentation`` aspect of every schema field the schema leaves undescribed (what
    DataHub's documentation propagation writes), read ``FIELD_BATCH`` fields at a time: a
    million datasets have tens of millions of fields, and their URNs all at once were the
    read path's peak."""
    pending = _undocumented(raw)
    while batch := {u: (d, p) for u, d, p in islice(pending, FIELD_BATCH)}:
        found = graph.get_aspects(sorted(batch), ["documentation"])
        for urn, aspects in found.items():
            text = human_text(aspects.get("documentation"))
            if text and urn in batch:
                dataset, path = batch[urn]
                raw.field_docs.setdefault(dataset, {})[path] = text
    return sum(len(d) for d in raw.field_docs.values())
