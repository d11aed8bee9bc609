"""Schemas read for scoring, kept as small as what scoring reads from them.

A schemaMetadata aspect as DataHub stores it carries, per field, its type union, flags and
defaults, and per schema the platform DDL; the read path uses a field's path, native type,
description, terms and tags (assemble.field_texts, LazyColumns, read_field_documentation).
Parsed whole, a million datasets' schemas were most of the read path's memory (about 6 GB);
this module slims each as it is decoded and keeps, per field, only those keys, sharing one dict
between the many fields with the same path and type and nothing else. The dicts are read,
never changed, downstream.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from upstream_dagster.datahub.model import Json
from upstream_dagster.datahub.protocol import MetadataGraph

SCHEMA_ASPECTS = ["schemaMetadata", "editableSchemaMetadata"]
FIELD_KEYS = ("fieldPath", "nativeDataType", "description", "glossaryTerms", "globalTags")


def slim_field(field: Json, shared: dict[tuple[str, str, str], Json]) -> Json:
    """``field`` with only the keys scoring reads; one shared dict per (path, type, text)."""
    if field.get("glossaryTerms") or field.get("globalTags"):
        return {k: field[k] for k in FIELD_KEYS if k in field}
    key = (
        str(field["fieldPath"]),
        str(field.get("nativeDataType") or ""),
        str(field.get("description") or ""),
    )
    found = shared.get(key)
    if found is None:
        found = {k: field[k] for k in FIELD_KEYS[:3] if k in field}
        shared[key] = found
    return found


def slim_schema(schema: Json, shared: dict[tuple[str, str, str], Json]) -> Json:
    return {"fields": tuple(slim_field(f, shared) for f in schema.get("fields") or ())}


def read_schemas(
    graph: MetadataGraph, urns: list[str], into: Mapping[str, MutableMapping[str, Any]]
) -> int:
    """The schema aspects of ``urns`` into ``into`` (urn -> aspects), each schema slimmed as it
    is decoded (one read: DataHub Lite scans the schemas once); returns how many were found."""
    shared: dict[tuple[str, str, str], Json] = {}

    def slim(aspect: str, value: Json) -> Json:
        return slim_schema(value, shared) if aspect == "schemaMetadata" else value

    found = graph.get_aspects(urns, SCHEMA_ASPECTS, shape=slim)
    for urn, aspects in found.items():
        into[urn].update(aspects)
    return sum(len(aspects) for aspects in found.values())
