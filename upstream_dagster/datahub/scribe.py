"""What an investigation leaves in DataHub: the incident (its description is the RCA), a
runbook on the cause, memory properties, tags on the cause column and the blast radius, and
guard assertions at the ingestion boundary. Every write returns a receipt.
"""

from __future__ import annotations

import hashlib

from upstream_dagster import clock
from upstream_dagster.conformance.proposals import Change
from upstream_dagster.datahub.model import Json, Receipt
from upstream_dagster.datahub.protocol import MetadataGraph
from upstream_dagster.datahub.writers import ACTOR, write_change
from upstream_dagster.reliability.verdict import Verdict, rca_markdown

INCIDENT_TYPE = {
    "rename": "DATA_SCHEMA",
    "column_removed": "DATA_SCHEMA",
    "type_change": "DATA_SCHEMA",
    "null_jump": "FIELD",
    "value_shift": "FIELD",
    "volume_drop": "VOLUME",
    "volume_jump": "VOLUME",
    "stale": "FRESHNESS",
    "not_rebuilt": "OPERATIONAL",
}
PROPERTIES = {
    "fragilityScore": "urn:li:dataType:datahub.number",
    "lastRootCause": "urn:li:dataType:datahub.string",
    "mttrMinutes": "urn:li:dataType:datahub.number",
    "knownFailureModes": "urn:li:dataType:datahub.string",
}
ROOT_TAG = "urn:li:tag:upstream-root-cause"
IMPACT_TAG = "urn:li:tag:upstream-impacted"


def incident_urn(key: str) -> str:
    return f"urn:li:incident:upstream-{hashlib.sha1(key.encode()).hexdigest()[:20]}"


def _stamp() -> Json:
    return {"time": clock.observed_ms(), "actor": ACTOR}


def incident_info(v: Verdict, state: str, stage: str, message: str) -> Json:
    kind = INCIDENT_TYPE.get(v.failure_class or "", "CUSTOM")
    title = (
        f"{v.check.description or 'check'} failed: {v.headline()}"
        if v.concluded
        else f"{v.check.description or 'check'} failed; cause not established"
    )
    info: Json = {
        "type": kind,
        "title": title[:200],
        "description": rca_markdown(v),
        "entities": [v.symptom],
        "priority": 0 if v.risk.terms[0].value else 1,
        "assignees": [{"actor": o, "assignedAt": _stamp()} for o in v.owners],
        "status": {"state": state, "stage": stage, "message": message, "lastUpdated": _stamp()},
        "source": {"type": "ASSERTION_FAILURE", "sourceUrn": v.check.assertion},
        "created": {"time": v.window.symptom_ms, "actor": ACTOR},
        "startedAt": v.window.symptom_ms,
    }
    if kind == "CUSTOM":  # DataHub needs the custom type named (FIELD, not a made-up COLUMN)
        info["customType"] = f"Upstream: {v.failure_class or 'cause not established'}"
    return info


def raise_incident(graph: MetadataGraph, v: Verdict) -> Receipt:
    stage = "INVESTIGATION" if v.concluded else "TRIAGE"
    return graph.write_aspect(
        incident_urn(v.key), "incidentInfo", incident_info(v, "ACTIVE", stage, v.headline())
    )


def close_incident(graph: MetadataGraph, v: Verdict, resolved: bool, message: str) -> Receipt:
    state, stage = ("RESOLVED", "FIXED") if resolved else ("ACTIVE", "WORK_IN_PROGRESS")
    return graph.write_aspect(
        incident_urn(v.key), "incidentInfo", incident_info(v, state, stage, message)
    )


def _define_properties(graph: MetadataGraph) -> list[Receipt]:
    out = []
    for name, kind in PROPERTIES.items():
        urn = f"urn:li:structuredProperty:{name}"
        if graph.get_aspects([urn], ["propertyDefinition"]).get(urn):
            continue
        out.append(
            graph.write_aspect(
                urn,
                "propertyDefinition",
                {
                    "qualifiedName": name,
                    "displayName": name,
                    "valueType": kind,
                    "cardinality": "MULTIPLE" if name == "knownFailureModes" else "SINGLE",
                    "entityTypes": ["urn:li:entityType:datahub.dataset"],
                    "description": "Written by Upstream's reliability controller.",
                },
            )
        )
    return out


def _current(graph: MetadataGraph, urn: str, prop: str) -> list[str]:
    aspects = graph.get_aspects([urn], ["structuredProperties"]).get(urn, {})
    for p in (aspects.get("structuredProperties") or {}).get("properties", []):
        if p.get("propertyUrn") == prop:
            return [str(next(iter(x.values()))) for x in p.get("values", [])]
    return []


def _set(graph: MetadataGraph, urn: str, name: str, *values: str) -> list[Receipt]:
    change = Change("set_structured_property", (f"urn:li:structuredProperty:{name}", *values))
    return [r for r, _ in write_change(graph, urn, change)]


def remember(graph: MetadataGraph, v: Verdict, mttr_minutes: float) -> list[Receipt]:
    """Memory on cause and symptom, in structured properties (patched one at a time)."""
    from upstream_dagster.datahub.incidents import memory_value

    if not v.concluded or v.cause is None or v.failure_class is None:
        return []
    receipts = _define_properties(graph)
    mode = f"{v.failure_class}:{v.column or '*'}"
    for urn in dict.fromkeys([v.cause, v.symptom]):
        modes = sorted({*_current(graph, urn, "urn:li:structuredProperty:knownFailureModes"), mode})
        receipts += _set(
            graph, urn, "lastRootCause", memory_value(v.cause, v.column, v.failure_class)
        )
        receipts += _set(graph, urn, "knownFailureModes", *modes)
        receipts += _set(graph, urn, "fragilityScore", f"{min(1.0, len(modes) / 5):.2f}")
        receipts += _set(graph, urn, "mttrMinutes", f"{mttr_minutes:.1f}")
    return receipts


def runbook(graph: MetadataGraph, v: Verdict, incident: str | None = None) -> list[Receipt]:
    """A runbook link on the cause. ``incident`` is the URN DataHub gave the incident (a GMS
    names it itself); without it, Upstream's own key URN is cited."""
    if not v.concluded or v.cause is None:
        return []
    steps = (
        f"Runbook ({v.failure_class}{' of ' + v.column if v.column else ''}): when "
        f"{v.check.description or 'this check'} fails downstream, check this feed first. "
        f"Fix: {v.remedy.summary}. Learned from incident {incident or incident_urn(v.key)}."
    )
    url = f"https://upstream.invalid/runbooks/{v.failure_class}/{v.key}"
    return [r for r, _ in write_change(graph, v.cause, Change("add_memory", (url, steps)))]


def tag_blast_radius(graph: MetadataGraph, v: Verdict, impacted: tuple[str, ...]) -> list[Receipt]:
    if not v.concluded or v.cause is None:
        return []
    receipts = []
    if v.column:
        change = Change("add_column_tag", (v.column, ROOT_TAG))
        receipts += [r for r, _ in write_change(graph, v.cause, change)]
    for urn in impacted:
        receipts += [r for r, _ in write_change(graph, urn, Change("add_tag", (IMPACT_TAG,)))]
    return receipts


def guard_assertions(graph: MetadataGraph, v: Verdict) -> list[Receipt]:
    """A schema contract and a NULL guard on the column that emptied, on the cause itself, so
    the next occurrence fails one hop from the feed."""
    if not v.concluded or v.cause is None or not v.column:
        return []
    receipts = []
    for rule in ("schema_contract", "not_null"):
        digest = hashlib.sha1(f"{rule}|{v.cause}|{v.column}".encode()).hexdigest()[:16]
        urn = f"urn:li:assertion:upstream-guard-{digest}"
        info = {
            "type": "CUSTOM",
            "customAssertion": {
                "type": f"Upstream guard: {rule}",
                "entity": v.cause,
                "field": f"urn:li:schemaField:({v.cause},{v.column})",
                "logic": f"{rule}({v.column})",
            },
            "description": f"Upstream guard: {rule.replace('_', ' ')} on {v.column}",
            "customProperties": {"upstream_guard": rule, "column": v.column},
        }
        receipts.append(graph.write_aspect(urn, "assertionInfo", info))
    return receipts
