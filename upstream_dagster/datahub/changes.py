"""One writer per change kind. A writer takes the intended change (add this owner, set this
description), never a whole aspect, and knows both ways it can land: merged into the current
value (read-modify-write, on DataHub Lite) and as a server-side PATCH of only the change (on a
GMS). Either way nobody's other values are overwritten.

Every write made through this module records the aspect's pre-image first and returns it with
the receipt (`Written`), so whatever Upstream writes can be undone by `restore`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from upstream_dagster import clock
from upstream_dagster.conformance.proposals import Change, ChangeKind, assertion_urn
from upstream_dagster.datahub import _sdk, aspects
from upstream_dagster.datahub.model import Json, PreImage, Receipt, Written
from upstream_dagster.datahub.protocol import MetadataGraph
from upstream_dagster.datahub.values import field_tags, property_values, shown
from upstream_dagster.errors import UpstreamError

Values = tuple[str, ...]
# (builder, values, number-typed property URNs) -> None: adds the change to an SDK patch
Patch = Callable[[Any, Values, set[str]], None]


@dataclass(frozen=True)
class ChangeWriter:
    kind: ChangeKind
    aspect: str  # the aspect of the asset the change lands in
    merge: Callable[[Json | None, Values], Json]  # read-modify-write (Lite)
    patch: Patch  # only the change (a GMS)
    reads_back: Callable[[Values, Json, set[str]], bool]  # the change shows in what DataHub holds


def _stamp() -> Json:
    return {"time": clock.now_ms(), "actor": aspects.ACTOR}


# -- merges: the change applied to the aspect's current value ----------------------------------
def _merge_owner(current: Json | None, values: Values) -> Json:
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


def _merge_description(current: Json | None, values: Values) -> Json:
    value = dict(current or {})
    value["description"] = values[0]
    value["lastModified"] = _stamp()
    value.setdefault("created", _stamp())
    return value


def _merge_terms(current: Json | None, values: Values) -> Json:
    value = dict(current or {"terms": []})
    terms = list(value.get("terms", []))
    terms += [{"urn": t} for t in values if not any(x.get("urn") == t for x in terms)]
    value["terms"] = terms
    value["auditStamp"] = value.get("auditStamp") or _stamp()
    return value


def _merge_domain(current: Json | None, values: Values) -> Json:
    return {"domains": [values[0]]}


def _merge_tags(current: Json | None, values: Values) -> Json:
    value = dict(current or {"tags": []})
    tags = list(value.get("tags", []))
    tags += [{"tag": t} for t in values if not any(x.get("tag") == t for x in tags)]
    value["tags"] = tags
    return value


def _merge_property(current: Json | None, values: Values) -> Json:
    """values: (property URN, value, ...) — sets that one property (none: removes it), keeps
    every other one."""
    prop, *new = values
    value = dict(current or {"properties": []})
    kept = [p for p in value.get("properties", []) if p.get("propertyUrn") != prop]
    added = [{"propertyUrn": prop, "values": [{"string": v} for v in new]}] if new else []
    value["properties"] = [*kept, *added]
    return value


def _merge_memory(current: Json | None, values: Values) -> Json:
    """values: (url, description) — adds one link to the asset's institutional memory, or
    replaces the link with that URL (as DataHub's patch, keyed by URL, does)."""
    url, description = values
    value = dict(current or {"elements": []})
    elements = [e for e in value.get("elements", []) if e.get("url") != url]
    elements.append({"url": url, "description": description, "createStamp": _stamp()})
    value["elements"] = elements
    return value


def _merge_column_tag(current: Json | None, values: Values) -> Json:
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


def _merge_column_descriptions(current: Json | None, values: Values) -> Json:
    """values: (field path, description, field path, description, ...) — describes those
    columns, keeps every other field's edits (and these fields' tags and terms)."""
    value = dict(current or {"editableSchemaFieldInfo": []})
    infos = [dict(f) for f in value.get("editableSchemaFieldInfo", [])]
    for field_path, text in zip(values[::2], values[1::2], strict=True):
        field = next((f for f in infos if f.get("fieldPath") == field_path), None)
        if field is None:
            field = {"fieldPath": field_path}
            infos.append(field)
        field["description"] = text
    value["editableSchemaFieldInfo"] = infos
    return value


# -- patches: only the change travels (the SDK's patch builders) -------------------------------
def _classes() -> Any:
    _sdk.prepare()
    from datahub.metadata import schema_classes

    return schema_classes


def _patch_each(add: Callable[[Any, Any, str], None]) -> Patch:
    def patch(builder: Any, values: Values, numbers: set[str]) -> None:
        classes = _classes()
        for value in values:
            add(builder, classes, value)

    return patch


def set_property_patch(builder: Any, prop: str, values: list[str], numbers: set[str]) -> None:
    """Patch one structured property, typed by its definition (numbers travel as numbers)."""
    typed: list[str | float] = [float(v) for v in values] if prop in numbers else list(values)
    if not typed:
        builder.remove_structured_property(prop)
    else:
        builder.set_structured_property(prop, typed if len(typed) != 1 else typed[0])


def _patch_property(builder: Any, values: Values, numbers: set[str]) -> None:
    prop, *new = values
    set_property_patch(builder, prop, list(new), numbers)


def _patch_memory(builder: Any, values: Values, numbers: set[str]) -> None:
    classes = _classes()
    url, description = values
    builder.add_institutional_memory(
        classes.InstitutionalMemoryMetadataClass(
            url=url,
            description=description,
            createStamp=classes.AuditStampClass(clock.now_ms(), aspects.ACTOR),
        )
    )


def _patch_column_tag(builder: Any, values: Values, numbers: set[str]) -> None:
    field_path, tag = values
    builder.for_field(field_path).add_tag(_classes().TagAssociationClass(tag))


def _patch_column_descriptions(builder: Any, values: Values, numbers: set[str]) -> None:
    # The SDK's field helper patches tags and terms only; a description is the same JSON
    # patch on the field's entry of editableSchemaMetadata (keyed by its path)
    for field_path, text in zip(values[::2], values[1::2], strict=True):
        builder._add_patch(
            "editableSchemaMetadata",
            "add",
            path=("editableSchemaFieldInfo", field_path, "description"),
            value=text,
        )


# -- read-back: does what DataHub holds now show the change ------------------------------------
def _leaves(value: Any) -> set[str]:
    """Every string inside an aspect value."""
    if isinstance(value, dict):
        return set().union(*(_leaves(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_leaves(v) for v in value))
    return {value} if isinstance(value, str) else set()


def _shows_values(values: Values, back: Json, numbers: set[str]) -> bool:
    return set(values) <= _leaves(back)


def _shows_property(values: Values, back: Json, numbers: set[str]) -> bool:
    prop, *new = values
    held = property_values(back).get(prop, [])
    return shown(prop, held, numbers) == shown(prop, new, numbers)


def _shows_column_tag(values: Values, back: Json, numbers: set[str]) -> bool:
    field_path, tag = values
    return tag in field_tags(back).get(field_path, set())


def _shows_column_descriptions(values: Values, back: Json, numbers: set[str]) -> bool:
    held = {
        f.get("fieldPath"): f.get("description") for f in back.get("editableSchemaFieldInfo", [])
    }
    return all(held.get(p) == t for p, t in zip(values[::2], values[1::2], strict=True))


WRITERS: dict[str, ChangeWriter] = {
    w.kind: w
    for w in (
        ChangeWriter(
            "add_owner",
            "ownership",
            _merge_owner,
            _patch_each(
                lambda b, c, v: b.add_owner(c.OwnerClass(v, c.OwnershipTypeClass.DATAOWNER))
            ),
            _shows_values,
        ),
        ChangeWriter(
            "set_description",
            "editableDatasetProperties",
            _merge_description,
            _patch_each(lambda b, c, v: b.set_description(v, editable=True)),
            _shows_values,
        ),
        ChangeWriter(
            "add_term",
            "glossaryTerms",
            _merge_terms,
            _patch_each(lambda b, c, v: b.add_term(c.GlossaryTermAssociationClass(v))),
            _shows_values,
        ),
        ChangeWriter(
            "set_domain",
            "domains",
            _merge_domain,
            _patch_each(lambda b, c, v: b.add_domain(c.DomainAssociationClass(domain=v))),
            _shows_values,
        ),
        ChangeWriter(
            "add_tag",
            "globalTags",
            _merge_tags,
            _patch_each(lambda b, c, v: b.add_tag(c.TagAssociationClass(v))),
            _shows_values,
        ),
        ChangeWriter(
            "set_structured_property",
            "structuredProperties",
            _merge_property,
            _patch_property,
            _shows_property,
        ),
        ChangeWriter(
            "add_memory", "institutionalMemory", _merge_memory, _patch_memory, _shows_values
        ),
        ChangeWriter(
            "add_column_tag",
            "editableSchemaMetadata",
            _merge_column_tag,
            _patch_column_tag,
            _shows_column_tag,
        ),
        ChangeWriter(
            "set_column_descriptions",
            "editableSchemaMetadata",
            _merge_column_descriptions,
            _patch_column_descriptions,
            _shows_column_descriptions,
        ),
    )
}


# -- tracked writes: the pre-image first, then the write, then the receipt --------------------
def current(graph: MetadataGraph, urn: str, aspect: str) -> Json | None:
    return graph.get_aspects([urn], [aspect]).get(urn, {}).get(aspect)


def _guarded(urn: str, aspect: str, write: Callable[[], Receipt]) -> Receipt:
    try:
        return write()
    except (UpstreamError, OSError, ValueError) as exc:
        return Receipt(urn, aspect, False, f"write failed: {exc}")


# Called with each pre-image before its write: where a caller makes it durable (the ledger).
Journal = Callable[[PreImage], None]


def write(
    graph: MetadataGraph, urn: str, aspect: str, value: Json, journal: Journal | None = None
) -> Written:
    """A whole aspect (an assertion definition, an incident), with its pre-image."""
    before = PreImage(urn, aspect, current(graph, urn, aspect))
    if journal is not None:
        journal(before)
    return Written(_guarded(urn, aspect, lambda: graph.write_aspect(urn, aspect, value)), before)


def apply(
    graph: MetadataGraph, urn: str, change: Change, journal: Journal | None = None
) -> list[Written]:
    """One intended change on one asset: a single aspect, or for `add_assertions` one
    assertion definition per template. ``journal`` gets each pre-image before its write."""
    if change.kind == "add_assertions":
        return [
            write(
                graph,
                assertion_urn(urn, t),
                "assertionInfo",
                aspects.template_assertion(urn, t),
                journal,
            )
            for t in change.values
        ]
    if change.columns:  # a description with its columns': two aspects, each undoable
        flat = tuple(x for pair in change.columns for x in pair)
        return [
            *apply(graph, urn, Change(change.kind, change.values), journal),
            *apply(graph, urn, Change("set_column_descriptions", flat), journal),
        ]
    aspect = WRITERS[change.kind].aspect
    before = PreImage(urn, aspect, current(graph, urn, aspect))
    if journal is not None:
        journal(before)
    return [Written(_guarded(urn, aspect, lambda: graph.apply_change(urn, change)), before)]


def receipts(written: list[Written]) -> list[Receipt]:
    return [w.receipt for w in written]


def restore(graph: MetadataGraph, pre: PreImage) -> Receipt:
    """Put an aspect back as it was; an aspect that did not exist is removed again. An aspect
    that already reads as it was (a write that never landed before its run died) is left
    alone: undo writes nothing twice."""
    now = current(graph, pre.urn, pre.aspect)
    if now == pre.value:
        return Receipt(pre.urn, pre.aspect, False, "already as it was")
    if pre.value is None:
        return graph.delete_aspect(pre.urn, pre.aspect)
    return graph.write_aspect(pre.urn, pre.aspect, pre.value)
