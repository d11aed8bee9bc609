"""A PATCH as a DataHub GMS applies it to the aspect it holds, for the aspects Upstream patches.

A keyed patch (``{"arrayPrimaryKeys": {field: [keys]}, "patch": [...]}``, GenericJsonPatch) reads
each path after the field as the values of the entry's keys, in order (a nested key is joined by
U+241F): ``add`` replaces the entry with those key values or appends one, ``remove`` drops every
entry they match (a shorter path matches as a prefix). A plain JSON-array patch goes to the
aspect's template: a field's tags in editableSchemaMetadata are keyed by field path and tag URN
(EditableSchemaMetadataTemplate), an editable description is a field
(EditableDatasetPropertiesTemplate). Anything else is refused as the server refuses it."""

from __future__ import annotations

import copy
from typing import Any

Json = dict[str, Any]
SEPARATOR = "\u241f"


SYSTEM = {"time": 0, "actor": "urn:li:corpuser:__datahub_system"}
# what a template starts from when the aspect does not exist yet (each Template.getDefault)
DEFAULTS: dict[str, Json] = {
    "glossaryTerms": {"terms": [], "auditStamp": SYSTEM},
    "ownership": {"owners": [], "lastModified": SYSTEM},
    "globalTags": {"tags": []},
    "institutionalMemory": {"elements": []},
    "structuredProperties": {"properties": []},
    "domains": {"domains": []},
    "editableSchemaMetadata": {"editableSchemaFieldInfo": []},
    "editableDatasetProperties": {},
}


class Refused(Exception):
    """The server refuses the patch; ``status`` is the HTTP status it answers with."""

    def __init__(self, message: str, status: int = 500) -> None:
        super().__init__(message)
        self.status = status


def _parts(path: str) -> list[str]:
    return [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]


def _key(entry: Json, key: str) -> str:
    value: Any = entry
    for part in key.split(SEPARATOR):
        value = value.get(part) if isinstance(value, dict) else None
    return "" if value is None else str(value)


def _keyed(value: Json, keys: dict[str, list[str]], ops: list[Json]) -> Json:
    for op in ops:
        field, *path = _parts(op["path"])
        if field not in keys:
            raise Refused(f"arrayPrimaryKeys names no keys for /{field}")
        names = keys[field][: len(path)]
        entries = list(value.get(field) or [])

        def matches(entry: Json, names: list[str] = names, path: list[str] = path) -> bool:
            return all(_key(entry, k) == v for k, v in zip(names, path, strict=False))

        if op["op"] == "add":
            kept = [e for e in entries if not matches(e)]
            at = next((i for i, e in enumerate(entries) if matches(e)), len(kept))
            kept.insert(min(at, len(kept)), op["value"])
            value[field] = kept
        elif op["op"] == "remove":
            value[field] = [e for e in entries if not matches(e)]
        else:
            raise Refused(f"unsupported patch operation {op['op']}")
    return value


def _field_tags(value: Json, ops: list[Json]) -> Json:
    infos = value.setdefault("editableSchemaFieldInfo", [])
    for op in ops:
        parts = _parts(op["path"])
        if (
            len(parts) != 5
            or parts[0] != "editableSchemaFieldInfo"
            or parts[2:4]
            != [
                "globalTags",
                "tags",
            ]
        ):
            raise Refused(f"EditableSchemaMetadataTemplate cannot apply {op['path']}")
        field = next((f for f in infos if f.get("fieldPath") == parts[1]), None)
        if field is None:
            field = {"fieldPath": parts[1]}
            infos.append(field)
        tags = field.setdefault("globalTags", {}).setdefault("tags", [])
        tags[:] = [t for t in tags if t.get("tag") != parts[4]]
        if op["op"] == "add":
            tags.append(op["value"])
    return value


def _description(value: Json, ops: list[Json]) -> Json:
    for op in ops:
        if op["path"] != "/description" or op["op"] not in ("add", "replace"):
            raise Refused(f"EditableDatasetPropertiesTemplate cannot apply {op['path']}")
        value["description"] = op["value"]
    return value


def apply(aspect: str, current: Json | None, body: Any, release: Any) -> Json:
    """The aspect after the patch, or `Refused` as a server of ``release`` refuses it."""
    value = copy.deepcopy(current if current is not None else DEFAULTS.get(aspect, {}))
    if isinstance(body, dict):
        if not release.keyed_patch:  # PatchItemImpl.convertToJsonPatch reads an array only
            raise Refused(f"Invalid JSON Patch: {body}")
        keys = body.get("arrayPrimaryKeys") or {}
        if "domainAssociations" in keys and not release.domain_associations:
            raise Refused("unrecognized field found but not allowed: domainAssociations", 422)
        value = _keyed(value, keys, body["patch"])
        if aspect == "domains":  # the 1.7 hook copies the associations into domains
            held = list(value.get("domains") or [])
            for association in value.get("domainAssociations") or []:
                if association["domain"] not in held:
                    held.append(association["domain"])
            value["domains"] = held
        return value
    if aspect == "editableSchemaMetadata":
        return _field_tags(value, body)
    if aspect == "editableDatasetProperties" and release.description_template:
        return _description(value, body)
    raise Refused(f"no patch template for aspect {aspect} on DataHub {release.name}")
