"""What an investigation leaves in DataHub: the incident (its description is the RCA), a
runbook on the cause, memory properties, tags on the cause column and the blast radius, and
guard assertions at the ingestion boundary. Every write returns its receipt and the pre-image
recorded before it (`Written`), so an incident's write-back can be undone like a batch.
"""

from __future__ import annotations

import hashlib
import os
from urllib.parse import quote

from upstream_dagster import clock
from upstream_dagster.conformance.proposals import Change
from upstream_dagster.datahub import aspects, changes
from upstream_dagster.datahub.aspects import ACTOR
from upstream_dagster.datahub.incidents import memory_value
from upstream_dagster.datahub.model import Json, Written
from upstream_dagster.datahub.protocol import MetadataGraph
from upstream_dagster.datahub.values import property_values
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


def raise_incident(graph: MetadataGraph, v: Verdict) -> Written:
    stage = "INVESTIGATION" if v.concluded else "TRIAGE"
    info = incident_info(v, "ACTIVE", stage, v.headline())
    return changes.write(graph, incident_urn(v.key), "incidentInfo", info)


def close_incident(graph: MetadataGraph, v: Verdict, resolved: bool, message: str) -> Written:
    state, stage = ("RESOLVED", "FIXED") if resolved else ("ACTIVE", "WORK_IN_PROGRESS")
    info = incident_info(v, state, stage, message)
    return changes.write(graph, incident_urn(v.key), "incidentInfo", info)


def _define_properties(graph: MetadataGraph) -> list[Written]:
    out = []
    for name, kind in PROPERTIES.items():
        urn = f"urn:li:structuredProperty:{name}"
        if graph.get_aspects([urn], ["propertyDefinition"]).get(urn):
            continue
        definition = aspects.property_definition(
            name,
            kind,
            "Written by Upstream's reliability controller.",
            multiple=name == "knownFailureModes",
        )
        out.append(changes.write(graph, urn, "propertyDefinition", definition))
    return out


def _set(graph: MetadataGraph, urn: str, name: str, *values: str) -> list[Written]:
    change = Change("set_structured_property", (f"urn:li:structuredProperty:{name}", *values))
    return changes.apply(graph, urn, change)


def remember(graph: MetadataGraph, v: Verdict, mttr_minutes: float) -> list[Written]:
    """Memory on cause and symptom, in structured properties (patched one at a time)."""
    if not v.concluded or v.cause is None or v.failure_class is None:
        return []
    written = _define_properties(graph)
    mode = f"{v.failure_class}:{v.column or '*'}"
    modes_urn = "urn:li:structuredProperty:knownFailureModes"
    for urn in dict.fromkeys([v.cause, v.symptom]):
        held = property_values(changes.current(graph, urn, "structuredProperties"))
        modes = sorted({*(str(m) for m in held.get(modes_urn, [])), mode})
        written += _set(
            graph, urn, "lastRootCause", memory_value(v.cause, v.column, v.failure_class)
        )
        written += _set(graph, urn, "knownFailureModes", *modes)
        written += _set(graph, urn, "fragilityScore", f"{min(1.0, len(modes) / 5):.2f}")
        written += _set(graph, urn, "mttrMinutes", f"{mttr_minutes:.1f}")
    return written


FRONTEND_ENV = "DATAHUB_FRONTEND_URL"  # where people open DataHub; links point there


def document_urn(key: str) -> str:
    return f"urn:li:document:upstream-postmortem-{hashlib.sha1(key.encode()).hexdigest()[:20]}"


def document_link(urn: str) -> str:
    base = os.environ.get(FRONTEND_ENV, "http://localhost:9002").rstrip("/")
    return f"{base}/document/{quote(urn, safe='')}"


def post_mortem(
    graph: MetadataGraph,
    v: Verdict,
    impacted: tuple[str, ...],
    minutes: float,
    approved_by: str,
    incident: str | None = None,
) -> list[Written]:
    """The post-mortem as a DataHub Document: what failed, the cause with its evidence, the
    fix and who approved it, the time to resolve; related to the symptom, the cause and every
    impacted asset, so it shows on each of them. A server older than 1.4 has no Document: the
    write is refused with that reason, and the incident's description keeps the analysis."""
    if not v.concluded or v.cause is None:
        return []
    related = list(dict.fromkeys(u for u in (v.symptom, v.cause, *impacted) if u))
    text = "\n".join(
        [
            f"# Post-mortem: {v.headline()}",
            "",
            f"**What failed:** {v.check.description or v.check.assertion} on {v.symptom}.",
            f"**Cause:** {v.headline()} (confidence {v.confidence:.2f}).",
            f"**Fix:** {v.remedy.summary}; approved by {approved_by or 'nobody recorded'}.",
            f"**Time to resolve:** {minutes:.0f} minutes.",
            f"**Incident:** {incident or incident_urn(v.key)}.",
            f"**Impacted:** {', '.join(related)}.",
            "",
            "## The analysis",
            "",
            rca_markdown(v),
        ]
    )
    info: Json = {
        "title": f"Post-mortem: {v.headline()}"[:200],
        "contents": {"text": text},
        "status": {"state": "PUBLISHED"},
        "created": _stamp(),
        "lastModified": _stamp(),
        "relatedAssets": [{"asset": u} for u in related],
        "customProperties": {
            "incident": incident or incident_urn(v.key),
            "approvedBy": approved_by,
            "timeToResolveMinutes": f"{minutes:.1f}",
            "failureClass": v.failure_class or "",
        },
    }
    return document(graph, document_urn(v.key), info)


def document(graph: MetadataGraph, urn: str, info: Json) -> list[Written]:
    """A Document and its owner: the info as Upstream writes it, then Upstream added as an
    owner through the owner change, so the Document has an owner and anyone a person adds
    later stays (a server names no owner for a Document written as an aspect)."""
    written = changes.write(graph, urn, "documentInfo", info)
    if not written.receipt.written:
        return [written]
    return [written, *changes.apply(graph, urn, Change("add_owner", (ACTOR,)))]


def runbook(
    graph: MetadataGraph, v: Verdict, incident: str | None = None, document: str | None = None
) -> list[Written]:
    """A runbook link on the cause, pointing at the post-mortem Document when DataHub holds
    one. ``incident`` is the URN DataHub gave the incident (a GMS names it itself); without
    it, Upstream's own key URN is cited."""
    if not v.concluded or v.cause is None:
        return []
    steps = (
        f"Runbook ({v.failure_class}{' of ' + v.column if v.column else ''}): when "
        f"{v.check.description or 'this check'} fails downstream, check this feed first. "
        f"Fix: {v.remedy.summary}. Learned from incident {incident or incident_urn(v.key)}"
        + (f"; post-mortem {document}." if document else ".")
    )
    url = (
        document_link(document)
        if document
        else f"https://upstream.invalid/runbooks/{v.failure_class}/{v.key}"
    )
    return changes.apply(graph, v.cause, Change("add_memory", (url, steps)))


def tag_blast_radius(graph: MetadataGraph, v: Verdict, impacted: tuple[str, ...]) -> list[Written]:
    if not v.concluded or v.cause is None:
        return []
    written: list[Written] = []
    if v.column:
        written += changes.apply(graph, v.cause, Change("add_column_tag", (v.column, ROOT_TAG)))
    for urn in impacted:
        written += changes.apply(graph, urn, Change("add_tag", (IMPACT_TAG,)))
    return written


def guard_urn(rule: str, dataset: str, column: str) -> str:
    digest = hashlib.sha1(f"{rule}|{dataset}|{column}".encode()).hexdigest()[:16]
    return f"urn:li:assertion:upstream-guard-{digest}"


def guard_assertions(graph: MetadataGraph, v: Verdict) -> list[Written]:
    """A schema contract and a NULL guard on the column that emptied, on the cause itself, so
    the next occurrence fails one hop from the feed."""
    if not v.concluded or v.cause is None or not v.column:
        return []
    return [
        changes.write(
            graph,
            guard_urn(rule, v.cause, v.column),
            "assertionInfo",
            aspects.guard_assertion(rule, v.cause, v.column),
        )
        for rule in ("schema_contract", "not_null")
    ]
