"""One writer per aspect. A writer takes the intended change (add this owner, set this
description), never a whole aspect: on `lite` it applies it as read-modify-write, so nobody's
other values are overwritten. Before each write the aspect's current value is recorded as its
pre-image; every write returns a receipt (what, where, the URN, or why nothing was written).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from upstream_dagster import clock
from upstream_dagster.conformance.proposals import Change, assertion_urn
from upstream_dagster.datahub.model import Json, Receipt
from upstream_dagster.datahub.protocol import MetadataGraph
from upstream_dagster.errors import UpstreamError

log = logging.getLogger(__name__)
ACTOR = "urn:li:corpuser:upstream"
# Changes a DataHub server applies as patches (only the change travels, so nobody else's
# values are rewritten); on `lite` every change is read-modify-write.
PATCHABLE = {
    "add_owner",
    "set_description",
    "add_term",
    "set_domain",
    "add_tag",
    "set_structured_property",
    "add_memory",
    "add_column_tag",
}


@dataclass(frozen=True)
class PreImage:
    urn: str
    aspect: str
    value: Json | None  # None: the aspect did not exist before the write

    def as_json(self) -> Json:
        return {"urn": self.urn, "aspect": self.aspect, "value": self.value}


def _stamp() -> Json:
    return {"time": clock.now_ms(), "actor": ACTOR}


def _ownership(current: Json | None, values: tuple[str, ...]) -> Json:
    value = dict(current or {"owners": []})
    owners = list(value.get("owners", []))
    for owner in values:
        if not any(o.get("owner") == owner for o in owners):
            owners.append(
                {
                    "owner": owner,
                    "type": "DATAOWNER",
                    "source": {"type": "OTHER", "url": "upstream"},
                }
            )
    value["owners"] = owners
    value.setdefault("lastModified", _stamp())
    return value


def _documentation(current: Json | None, values: tuple[str, ...]) -> Json:
    value = dict(current or {})
    value["description"] = values[0]
    value["lastModified"] = _stamp()
    value.setdefault("created", _stamp())
    return value


def _terms(current: Json | None, values: tuple[str, ...]) -> Json:
    value = dict(current or {"terms": []})
    terms = list(value.get("terms", []))
    terms += [{"urn": t} for t in values if not any(x.get("urn") == t for x in terms)]
    value["terms"] = terms
    value["auditStamp"] = value.get("auditStamp") or _stamp()
    return value


def _domain(current: Json | None, values: tuple[str, ...]) -> Json:
    return {"domains": [values[0]]}


def _tags(current: Json | None, values: tuple[str, ...]) -> Json:
    value = dict(current or {"tags": []})
    tags = list(value.get("tags", []))
    tags += [{"tag": t} for t in values if not any(x.get("tag") == t for x in tags)]
    value["tags"] = tags
    return value


def _structured(current: Json | None, values: tuple[str, ...]) -> Json:
    """values: (property URN, value, ...) — sets that one property, keeps every other one."""
    prop, *new = values
    value = dict(current or {"properties": []})
    kept = [p for p in value.get("properties", []) if p.get("propertyUrn") != prop]
    value["properties"] = [*kept, {"propertyUrn": prop, "values": [{"string": v} for v in new]}]
    return value


def _memory(current: Json | None, values: tuple[str, ...]) -> Json:
    """values: (url, description) — adds one link to the asset's institutional memory, or
    replaces the link with that URL (as DataHub's patch, keyed by URL, does)."""
    url, description = values
    value = dict(current or {"elements": []})
    elements = [e for e in value.get("elements", []) if e.get("url") != url]
    elements.append({"url": url, "description": description, "createStamp": _stamp()})
    value["elements"] = elements
    return value


def _column_tag(current: Json | None, values: tuple[str, ...]) -> Json:
    """values: (field path, tag URN) — tags one column, keeps every other field's edits."""
    field_path, tag = values
    value = dict(current or {"editableSchemaFieldInfo": []})
    infos = [dict(f) for f in value.get("editableSchemaFieldInfo", [])]
    field = next((f for f in infos if f.get("fieldPath") == field_path), None)
    if field is None:
        field = {"fieldPath": field_path}
        infos.append(field)
    tags = list((field.get("globalTags") or {}).get("tags", []))
    if not any(t.get("tag") == tag for t in tags):
        tags.append({"tag": tag})
    field["globalTags"] = {**(field.get("globalTags") or {}), "tags": tags}
    value["editableSchemaFieldInfo"] = infos
    return value


# change kind -> (aspect written on the asset, how the change merges into its current value)
WRITERS: dict[str, tuple[str, Callable[[Json | None, tuple[str, ...]], Json]]] = {
    "add_owner": ("ownership", _ownership),
    "set_description": ("editableDatasetProperties", _documentation),
    "add_term": ("glossaryTerms", _terms),
    "set_domain": ("domains", _domain),
    "add_tag": ("globalTags", _tags),
    "set_structured_property": ("structuredProperties", _structured),
    "add_memory": ("institutionalMemory", _memory),
    "add_column_tag": ("editableSchemaMetadata", _column_tag),
}


def _write(
    graph: MetadataGraph, urn: str, aspect: str, build: Callable[[Json | None], Json]
) -> tuple[Receipt, PreImage]:
    current = graph.get_aspects([urn], [aspect]).get(urn, {}).get(aspect)
    before = PreImage(urn, aspect, current)
    try:
        receipt = graph.write_aspect(urn, aspect, build(current))
    except (UpstreamError, OSError, ValueError) as exc:
        receipt = Receipt(urn, aspect, False, f"write failed: {exc}")
    return receipt, before


def write_change(graph: MetadataGraph, urn: str, change: Change) -> list[tuple[Receipt, PreImage]]:
    if change.kind == "add_assertions":
        return [
            _write(graph, assertion_urn(urn, t), "assertionInfo", _assertion_builder(urn, t))
            for t in change.values
        ]
    aspect, merge = WRITERS[change.kind]
    patch = getattr(graph, "patch_change", None)
    if (
        patch is not None and change.kind in PATCHABLE
    ):  # a server applies the change as a patch: nothing else is rewritten
        before = PreImage(urn, aspect, graph.get_aspects([urn], [aspect]).get(urn, {}).get(aspect))
        try:
            receipt: Receipt = patch(urn, change.kind, change.values)
        except (UpstreamError, OSError, ValueError) as exc:
            receipt = Receipt(urn, aspect, False, f"patch failed: {exc}")
        return [(receipt, before)]
    return [_write(graph, urn, aspect, lambda cur: merge(cur, change.values))]


def _assertion_builder(dataset: str, template: str) -> Callable[[Json | None], Json]:
    return lambda _current: _assertion(dataset, template)


def _assertion(dataset: str, template: str) -> Json:
    kind, _, column = template.partition(":")
    info: Json = {
        "type": "CUSTOM",
        "customAssertion": {"type": f"upstream {kind}", "entity": dataset, "logic": template},
        "description": f"Upstream guard: {template.replace('_', ' ')}",
        "customProperties": {"upstream_template": template},
    }
    if column:
        info["customAssertion"]["field"] = f"urn:li:schemaField:({dataset},{column})"
    return info


def restore(graph: MetadataGraph, pre: PreImage) -> Receipt:
    """Put an aspect back as it was; an aspect that did not exist is removed again."""
    if pre.value is None:
        delete: Any = getattr(graph, "delete_aspect", None)
        if delete is None:
            return Receipt(
                pre.urn,
                pre.aspect,
                False,
                "this backend cannot remove an aspect; remove it by hand",
            )
        receipt: Receipt = delete(pre.urn, pre.aspect)
        return receipt
    return graph.write_aspect(pre.urn, pre.aspect, pre.value)
