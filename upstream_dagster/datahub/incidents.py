"""From a failing assertion run event in DataHub to the investigation's trigger and memory."""

from __future__ import annotations

import re

from upstream_dagster.datahub.edges import field_path
from upstream_dagster.datahub.model import AssertionRun
from upstream_dagster.datahub.probe import profiles_of
from upstream_dagster.datahub.protocol import MetadataGraph
from upstream_dagster.errors import UpstreamError
from upstream_dagster.reliability.health import GRACE_MS, FailingCheck, Window
from upstream_dagster.reliability.investigate import Memory, Trigger

MEMORY = "urn:li:structuredProperty:lastRootCause"
_KEY = re.compile(r"^(?P<id>[A-Za-z0-9_.-]+)@(?P<ts>\d+)$")


def incident_key(run: AssertionRun) -> str:
    """A partition key from the event itself: the assertion's id and the event time."""
    return f"{run.assertion_urn.removeprefix('urn:li:assertion:')}@{run.timestamp_ms}"


def parse_key(key: str) -> tuple[str, int]:
    match = _KEY.match(key)
    if not match:
        raise UpstreamError(
            f"{key!r} is not an incident key",
            "incident keys look like ASSERTION_ID@EVENT_MILLIS; list them with `upstream queue`",
        )
    return f"urn:li:assertion:{match['id']}", int(match["ts"])


def failing_runs(graph: MetadataGraph, since_ms: int | None) -> list[AssertionRun]:
    """Failing assertion run events newer than ``since_ms``, oldest first."""
    runs = graph.assertion_runs(None, since_ms, latest_only=False)
    return [r for r in runs if r.result in ("FAILURE", "ERROR")]


def primary_of(graph: MetadataGraph, urn: str) -> str:
    sib = graph.get_aspects([urn], ["siblings"]).get(urn, {}).get("siblings") or {}
    if sib.get("siblings") and not sib.get("primary", False):
        return str(sib["siblings"][0])
    return urn


def trigger_for(graph: MetadataGraph, key: str) -> Trigger:
    assertion, ts = parse_key(key)
    runs = [
        r
        for r in graph.assertion_runs(None, ts - 1, latest_only=False)
        if r.assertion_urn == assertion and r.timestamp_ms == ts
    ]
    if not runs:
        raise UpstreamError(
            f"DataHub holds no run event of {assertion} at {ts}",
            "the incident key must name a failing run event DataHub still holds",
        )
    run = runs[0]
    info = graph.get_aspects([assertion], ["assertionInfo"]).get(assertion, {})
    info = info.get("assertionInfo") or {}
    custom = info.get("customAssertion") or {}
    native = dict(run.native)
    field = custom.get("field")
    check = FailingCheck(
        assertion,
        str(info.get("description") or custom.get("type") or "")[:160],
        field_path(field) if field else native.get("column"),
        ts,
        native.get("message", ""),
    )
    symptom = primary_of(graph, run.asserted_urn)
    return Trigger(symptom, check, Window(_last_good(graph, symptom, assertion, ts), ts))


def _last_good(graph: MetadataGraph, symptom: str, assertion: str, ts: int) -> int:
    """When the build before the failing one observed the symptom: its profile's stamp, or
    else the last time the failing check passed."""
    stamps = {p.at_ms for p in profiles_of(graph.aspect_history(symptom, "datasetProfile"))}
    current = [t for t in stamps if t <= ts + GRACE_MS]  # one stamp per build
    if len(current) >= 2:
        return sorted(current)[-2]
    passed = [
        r.timestamp_ms
        for r in graph.assertion_runs(None, None, latest_only=False)
        if r.assertion_urn == assertion and r.result == "SUCCESS" and r.timestamp_ms < ts
    ]
    return max(passed, default=0)


def recall(graph: MetadataGraph, symptom: str) -> Memory | None:
    """The root cause an earlier incident on this symptom wrote into its structured props."""
    props = graph.get_aspects([symptom], ["structuredProperties"]).get(symptom, {})
    for p in (props.get("structuredProperties") or {}).get("properties", []):
        if p.get("propertyUrn") == MEMORY and p.get("values"):
            text = str(next(iter(p["values"][0].values())))
            cause, _, rest = text.partition("|")
            column, _, failure = rest.partition("|")
            if cause.startswith("urn:li:dataset:") and failure:
                return Memory(cause, column or None, failure)
    return None


def memory_value(cause: str, column: str | None, failure_class: str) -> str:
    return f"{cause}|{column or ''}|{failure_class}"
