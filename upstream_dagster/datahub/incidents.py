"""From a failing assertion run event in DataHub to the investigation's trigger and memory."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from upstream_dagster.datahub.assertions import (
    assertee,
    assertion_column,
    assertion_label,
    check_kind,
)
from upstream_dagster.datahub.incident_keys import parse_key as parse_key
from upstream_dagster.datahub.incident_keys import short_id as short_id
from upstream_dagster.datahub.model import (
    AspectVersion,
    AssertionRun,
    SearchQuery,
    assertion_properties,
)
from upstream_dagster.datahub.node_reads import profiles_of
from upstream_dagster.datahub.probe import read_history
from upstream_dagster.datahub.protocol import MetadataGraph
from upstream_dagster.datahub.signals import is_build_check
from upstream_dagster.errors import UpstreamError
from upstream_dagster.reliability.health import GRACE_MS, FailingCheck, Window
from upstream_dagster.reliability.walk import Memory, Trigger
from upstream_dagster.spec.urns import platform_of, relation_of

MEMORY = "urn:li:structuredProperty:lastRootCause"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.:-]+")


def _safe(text: str, limit: int) -> str:
    """A piece of a partition key: no spaces, no "...", none of the key's own separators."""
    return re.sub(r"\.{2,}", ".", _UNSAFE.sub("_", text)).strip("_.")[:limit]


def check_name(info: dict[str, Any]) -> str:
    """A short name for an assertion: the dbt test's name, an Upstream monitor's name and
    column, else its label."""
    props = info.get("customProperties") or {}
    unique_id = str(props.get("dbt_unique_id", ""))
    if unique_id.count(".") >= 2:
        return unique_id.split(".")[2]
    if props.get("upstream_monitor"):
        field = str((info.get("customAssertion") or {}).get("field") or "")
        column = field.rpartition(",")[2].rstrip(")") if field else ""
        return str(props["upstream_monitor"]) + (f".{column}" if column else "")
    return assertion_label(info) if info else ""


def incident_key(run: AssertionRun, check: str = "") -> str:
    """A partition key a person can read: the dataset, the check, the event's UTC time, then
    the assertion id that makes it exact
    (``shop.orders:not_null_amount@2026-11-29T06:00:18.379Z~a94206c5``). The polling sensor and
    the DataHub Action both name the check from DataHub, so one event gets one key; a key
    without the check (DataHub did not answer) still names the same event (`same_event`)."""
    name = _safe(relation_of(run.asserted_urn), 80) if run.asserted_urn else "dataset"
    if check:
        name += ":" + _safe(check, 48)
    seconds, ms = divmod(run.timestamp_ms, 1000)
    when = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{name}@{when}.{ms:03d}Z~{run.assertion_urn.removeprefix('urn:li:assertion:')}"


def named(graph: MetadataGraph, runs: list[AssertionRun]) -> dict[str, str]:
    """Each run's incident key -> the short name of its check (one DataHub read for them all)."""
    urns = sorted({r.assertion_urn for r in runs})
    infos = graph.get_aspects(urns, ["assertionInfo"]) if urns else {}
    out = {}
    for r in runs:
        check = _safe(check_name((infos.get(r.assertion_urn) or {}).get("assertionInfo") or {}), 48)
        out[incident_key(r, check)] = check
    return out


def check_from_graphql(info: dict[str, Any]) -> str:
    """`check_name` of GraphQL's AssertionInfo (properties as key/value entries, a field path)."""
    custom = info.get("customAssertion") or {}
    path = str((custom.get("field") or {}).get("path") or "")
    as_aspect = {
        "description": info.get("description"),
        "customProperties": {
            str(e.get("key")): str(e.get("value")) for e in info.get("customProperties") or []
        },
        "customAssertion": {"type": custom.get("type"), "field": path} if custom else {},
    }
    return check_name({k: v for k, v in as_aspect.items() if v})


def same_event(key: str) -> tuple[str, int] | None:
    """The (assertion, event time) a key names, whichever form it has; None if it is not one."""
    try:
        return parse_key(key)
    except UpstreamError:
        return None


def failing_runs(graph: MetadataGraph, since_ms: int | None) -> list[AssertionRun]:
    """Failing assertion run events newer than ``since_ms``, oldest first."""
    runs = graph.assertion_runs(None, since_ms, latest_only=False)
    return [r for r in runs if r.result in ("FAILURE", "ERROR")]


def failing_now(graph: MetadataGraph, urn: str | None = None) -> list[AssertionRun]:
    """The assertions whose latest run fails, one per failing dataset (oldest first);
    ``urn`` narrows them to one assertion or one dataset."""
    failing = [r for r in graph.assertion_runs() if r.result in ("FAILURE", "ERROR")]
    if urn:
        failing = [r for r in failing if urn in (r.assertion_urn, r.asserted_urn)]
    first: dict[str, AssertionRun] = {}
    for run in failing:
        first.setdefault(run.asserted_urn, run)
    return list(first.values())


def failed_build_runs(graph: MetadataGraph) -> list[AssertionRun]:
    """The models whose latest build failed: their build checks' latest run events."""
    latest: dict[str, AssertionRun] = {}
    for run in graph.assertion_runs():
        if is_build_check(run.assertion_urn):
            latest[run.assertion_urn] = run
    return [r for r in latest.values() if r.result in ("FAILURE", "ERROR")]


@dataclass(frozen=True)
class Opened:
    """What triage read: the trigger, the symptom's own aspects and its history."""

    trigger: Trigger
    facts: dict[str, Any]
    history: dict[str, list[AspectVersion]]
    properties: dict[str, str]  # the failing assertion's customProperties


FACTS = ["siblings", "structuredProperties", "ownership", "domains", "glossaryTerms"]


def trigger_for(graph: MetadataGraph, key: str) -> Opened:
    """Three reads: the assertion, the symptom's aspects (memory among them), its history."""
    assertion, ts = parse_key(key)
    info = graph.get_aspects([assertion], ["assertionInfo"]).get(assertion, {})
    info = info.get("assertionInfo") or {}
    custom = info.get("customAssertion") or {}
    entity = custom.get("entity") or assertee(info)
    if not entity:
        raise UpstreamError(
            f"DataHub holds no assertionInfo naming a dataset for {assertion}",
            "the incident key must name an assertion DataHub still holds",
        )
    facts = graph.get_aspects([entity], FACTS).get(entity, {})
    sib = facts.get("siblings") or {}
    symptom = str(entity)
    if sib.get("siblings") and not sib.get("primary", False):
        symptom = str(sib["siblings"][0])
        facts = graph.get_aspects([symptom], FACTS).get(symptom, {})
    props = assertion_properties(info)
    check = FailingCheck(
        assertion, assertion_label(info), assertion_column(info), ts, kind=check_kind(info)
    )
    params = {**(info.get("datasetAssertion") or {}), **custom}
    inputs = check_inputs(graph, params, symptom)
    field = str((params.get("nativeParameters") or {}).get("field") or "").strip("'\"")
    columns = tuple((u, field) for u in inputs) if field else ()
    history = read_history(graph, symptom)
    window = Window(_last_good(graph, history, assertion, ts), ts)
    return Opened(Trigger(symptom, check, window, inputs, columns), facts, history, props)


_REF = re.compile(
    r"""^\s*(?:ref\(\s*['"]([^'"]+)['"]\s*\)|source\(\s*['"][^'"]+['"]\s*,\s*['"]([^'"]+)['"]\s*\))\s*$"""
)


def check_inputs(graph: MetadataGraph, custom: dict[str, Any], symptom: str) -> tuple[str, ...]:
    """Datasets a check reads besides its own: the parent of a relationships test, as DataHub's
    dbt source keeps it (``nativeParameters.to`` = ``ref('x')`` or ``source('s', 'x')``).
    One search read, only when the check names one."""
    target = str((custom.get("nativeParameters") or {}).get("to") or "")
    match = _REF.match(target)
    if not match:
        return ()
    name = match.group(1) or match.group(2)
    platform = platform_of(symptom)
    found = graph.search(SearchQuery(platforms=(platform,), names=(name,)))
    return tuple(u for u in sorted(found) if u != symptom)


def _last_good(
    graph: MetadataGraph, history: dict[str, list[AspectVersion]], assertion: str, ts: int
) -> int:
    """When the build before the failing one observed the symptom: its profile's stamp, or
    else the last time the failing check passed."""
    stamps = {p.at_ms for p in profiles_of(history.get("datasetProfile", []))}
    current = [t for t in stamps if t <= ts + GRACE_MS]  # one stamp per build
    if len(current) >= 2:
        return sorted(current)[-2]
    passed = [
        r.timestamp_ms
        for r in graph.assertion_runs(None, None, latest_only=False)
        if r.assertion_urn == assertion and r.result == "SUCCESS" and r.timestamp_ms < ts
    ]
    return max(passed, default=0)


def memory_of(facts: dict[str, Any]) -> Memory | None:
    """The root cause an earlier incident on this symptom wrote into its structured props."""
    for p in (facts.get("structuredProperties") or {}).get("properties", []):
        if p.get("propertyUrn") == MEMORY and p.get("values"):
            text = str(next(iter(p["values"][0].values())))
            cause, _, rest = text.partition("|")
            column, _, failure = rest.partition("|")
            if cause.startswith("urn:li:dataset:") and failure:
                return Memory(cause, column or None, failure)
    return None


def memory_value(cause: str, column: str | None, failure_class: str) -> str:
    return f"{cause}|{column or ''}|{failure_class}"
