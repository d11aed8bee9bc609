"""What each write and read goes out as, for a server of a given version: the write code asks
`patches` before it sends a change, `describe` says the same thing in words (`upstream spike`
prints it, `compatibility` tabulates it), so what is documented is what is sent.

Where a release does not understand the SDK's patch of a change, the whole aspect is read with
its version and written back with ``If-Version-Match`` (a conditional write every 1.x checks):
a concurrent edit makes the write fail, and it is read and merged again, never overwritten."""

from __future__ import annotations

from collections.abc import Callable

from upstream_dagster.datahub.changes import WRITERS
from upstream_dagster.datahub.gms.versions import Version, shown, supports

# change kind -> the feature a server needs to take the SDK's patch of it (None: every 1.x)
PATCH_FEATURE: dict[str, str | None] = {
    "add_owner": "keyed_patch",
    "add_term": "keyed_patch",
    "add_tag": "keyed_patch",
    "set_structured_property": "keyed_patch",
    "add_memory": "keyed_patch",
    "set_domain": "domain_patch",
    "set_description": "description_patch",
    # a plain JSON-array patch of one field's tags (EditableSchemaMetadataTemplate): every 1.x
    "add_column_tag": None,
}
Say = Callable[[Version | None], str]  # what a server of a version is sent
RMW = "read-modify-write, If-Version-Match"


def patches(version: Version | None, kind: str) -> bool:
    """Whether a change of this kind goes to this server as the SDK's patch."""
    feature = PATCH_FEATURE[kind]
    return feature is None or supports(version, feature)


def _change(version: Version | None, kind: str) -> str:
    if not patches(version, kind):
        return RMW
    keyed = PATCH_FEATURE[kind] is not None and kind != "set_description"
    return "PATCH" + (" (arrayPrimaryKeys)" if keyed else " (JSON array)")


def _changes(kind: str) -> Say:
    return lambda version: _change(version, kind)


def _fixed(text: str) -> Say:
    return lambda version: text


def _gated(feature: str, new: str, old: str) -> Say:
    return lambda version: new if supports(version, feature) else old


def _document(version: Version | None) -> str:
    if not supports(version, "document"):
        return "not sent (no Document entity): the analysis stays in the incident"
    return f"UPSERT documentInfo; its owner: {_change(version, 'add_owner')}"


# key -> (what a person calls it, read or write, what a server of a version is sent)
SURFACES: dict[str, tuple[str, str, Say]] = {
    **{
        kind: (f"{label} ({WRITERS[kind].aspect})", "write", _changes(kind))
        for kind, label in (
            ("add_owner", "owner"),
            ("add_term", "glossary term"),
            ("add_tag", "tag"),
            ("set_structured_property", "structured property"),
            ("add_memory", "link (runbook)"),
            ("set_domain", "domain"),
            ("set_description", "description"),
            ("add_column_tag", "column tag"),
        )
    },
    "upsert": ("any other aspect", "write", _fixed("UPSERT (ingestProposal)")),
    "custom_assertion": (
        "assertion",
        "write",
        _gated(
            "custom_assertion",
            "GraphQL upsertCustomAssertion",
            "UPSERT assertionInfo",
        ),
    ),
    "assertion_result": (
        "assertion result",
        "write",
        _gated(
            "assertion_result",
            "GraphQL reportAssertionResult",
            "UPSERT assertionRunEvent",
        ),
    ),
    "raise_incident": (
        "incident",
        "write",
        _fixed("GraphQL raiseIncident; its assertion in incidentInfo.source: " + RMW),
    ),
    "resolve_incident": ("incident status", "write", _fixed("GraphQL updateIncidentStatus")),
    "document": ("post-mortem Document", "write", _document),
    "search": ("search", "read", _fixed("GraphQL scrollAcrossEntities")),
    "aspects": ("aspects", "read", _fixed("OpenAPI v3 batchGet")),
    "lineage": (
        "lineage",
        "read",
        _fixed("lineage aspects; GraphQL scrollAcrossLineage downstream"),
    ),
    "timeline": (
        "timeline",
        "read",
        _gated("ownership_category", "OpenAPI v2 timeline", "OpenAPI v2 timeline (category OWNER)"),
    ),
    "assertion_runs": ("assertion runs", "read", _fixed("GraphQL entities.runEvents")),
    "incident_read_back": ("incident read-back", "read", _fixed("incidentInfo aspect (batchGet)")),
    "check_name": (
        "check name (the DataHub Action)",
        "read",
        _gated(
            "assertion_properties",
            "GraphQL assertion.info with customProperties",
            "assertionInfo aspect (Rest.li GET /aspects)",
        ),
    ),
    "whoami": (
        "reviewer identity",
        "read",
        _fixed("GraphQL me; the configured system client id is nobody"),
    ),
}


def describe(version: Version | None, key: str) -> str:
    """What a server of this version is sent for one surface."""
    if key not in SURFACES:
        return key
    return SURFACES[key][2](version)


def table(versions: tuple[Version, ...]) -> list[list[str]]:
    """Rows of the compatibility table: surface, read or write, then one cell per version."""
    header = ["surface", "kind", *(shown(v) for v in versions)]
    rows = [
        [label, rw, *(describe(v, key) for v in versions)]
        for key, (label, rw, _) in SURFACES.items()
    ]
    return [header, *rows]
