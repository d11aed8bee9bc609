"""`upstream spike`: exercise every DataHub surface Upstream uses, against the configured DataHub.

Reads run against what is there (the first datasets search finds); writes go to one scratch
dataset of Upstream's own (``urn:li:dataset:(urn:li:dataPlatform:upstream,spike.<stamp>,PROD)``)
and its assertion, incident and post-mortem Document, so nobody's metadata is touched. A surface
is PASS only when what it wrote (or asked for) read back; PARTIAL when the call was accepted but
the answer was empty or did not read back; FAIL when the call raised.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from upstream_dagster import clock
from upstream_dagster.conformance.proposals import Change, ChangeKind
from upstream_dagster.datahub import aspects, changes, scribe
from upstream_dagster.datahub.model import Receipt, SearchQuery
from upstream_dagster.datahub.protocol import MetadataGraph

PASS, PARTIAL, FAIL = "PASS", "PARTIAL", "FAIL"
SPIKE_PROPERTY = "urn:li:structuredProperty:upstreamSpike"
SPIKE_TERM = "urn:li:glossaryTerm:upstream-spike"


@dataclass(frozen=True)
class Surface:
    name: str
    operation: str  # what it sends
    result: str
    detail: str


def _read_back(
    graph: MetadataGraph, r: Receipt, aspect: str, holds: Callable[[dict[str, Any]], bool]
) -> tuple[str, str]:
    """PASS only when the aspect, read afresh, holds what was written."""
    if not r.written:
        return PARTIAL, r.detail
    value = graph.get_aspects([r.urn], [aspect]).get(r.urn, {}).get(aspect)
    if value is None or not holds(value):
        return PARTIAL, f"{r.detail}; but {aspect} of {r.urn} does not read back"
    return PASS, f"{r.detail}; read back"


def _found(n: int, what: str) -> tuple[str, str]:
    return (PASS if n else PARTIAL), f"{n} {what}" if n else f"answered, but no {what}"


def spike(
    graph: MetadataGraph, mark: Callable[[str], None] | None = None, now_ms: int | None = None
) -> list[Surface]:
    """Every surface, in the order Upstream uses them; one failure never stops the rest.
    ``mark`` is told each surface's name before it runs (a recording groups its exchanges);
    ``now_ms`` names the scratch entities (a replay gives the recorded one)."""
    now = clock.now_ms() if now_ms is None else now_ms
    scratch = f"urn:li:dataset:(urn:li:dataPlatform:upstream,spike.{now},PROD)"
    digest = hashlib.sha1(scratch.encode()).hexdigest()[:16]
    assertion = f"urn:li:assertion:upstream-spike-{digest}"
    incident = f"urn:li:incident:upstream-spike-{digest}"
    document = f"urn:li:document:upstream-spike-{digest}"
    datasets: list[str] = []

    def search() -> tuple[str, str]:
        datasets.extend(graph.search(SearchQuery(entity_type="dataset"))[:20])
        return _found(len(datasets), "datasets")

    def read_aspects() -> tuple[str, str]:
        found = graph.get_aspects(datasets, ["schemaMetadata", "ownership", "upstreamLineage"])
        return _found(sum(len(a) for a in found.values()), "aspects")

    def upstream() -> tuple[str, str]:
        return _found(len(graph.lineage(datasets, "upstream")), "upstream edges")

    def downstream() -> tuple[str, str]:
        return _found(len(graph.lineage(datasets[:3], "downstream")), "downstream edges")

    def timeline() -> tuple[str, str]:
        txs = [t for urn in datasets[:3] for t in graph.timeline(urn)]
        return _found(len(txs), "timeline transactions")

    def runs() -> tuple[str, str]:
        return _found(len(graph.assertion_runs(None, None, latest_only=True)), "assertion runs")

    def upsert() -> tuple[str, str]:
        props = {"name": f"spike.{now}", "description": "Scratch dataset of `upstream spike`."}
        receipt = graph.write_aspect(scratch, "datasetProperties", props)
        return _read_back(
            graph, receipt, "datasetProperties", lambda v: v.get("name") == props["name"]
        )

    def patched(kind: ChangeKind, *values: str) -> Callable[[], tuple[str, str]]:
        aspect = changes.WRITERS[kind].aspect

        def run() -> tuple[str, str]:
            ((receipt, _),) = changes.apply(graph, scratch, Change(kind, values))
            return _read_back(graph, receipt, aspect, lambda v: all(x in str(v) for x in values))

        return run

    def structured() -> tuple[str, str]:
        definition = aspects.property_definition(
            "upstreamSpike", "urn:li:dataType:datahub.string", "Written by `upstream spike`."
        )
        defined = graph.write_aspect(SPIKE_PROPERTY, "propertyDefinition", definition)
        if not defined.written:
            return PARTIAL, f"definition: {defined.detail}"
        return patched("set_structured_property", SPIKE_PROPERTY, "ok")()

    def custom_assertion() -> tuple[str, str]:
        info = {
            "type": "CUSTOM",
            "customAssertion": {"type": "Upstream spike", "entity": scratch, "logic": "spike()"},
            "description": "Upstream spike: a dataset-level custom assertion",
            "customProperties": {"upstream_spike": "1"},
        }
        receipt = graph.write_aspect(assertion, "assertionInfo", info)
        return _read_back(
            graph,
            receipt,
            "assertionInfo",
            lambda v: (v.get("customAssertion") or {}).get("entity") == scratch,
        )

    def result() -> tuple[str, str]:
        event = {
            "timestampMillis": now,
            "runId": f"spike-{now}",
            "asserteeUrn": scratch,
            "assertionUrn": assertion,
            "status": "COMPLETE",
            "result": {"type": "SUCCESS", "nativeResults": {"spike": "1"}},
        }
        receipt = graph.write_aspect(assertion, "assertionRunEvent", event)
        if not receipt.written:
            return PARTIAL, receipt.detail
        back = [r for r in graph.assertion_runs([scratch], now - 1) if r.assertion_urn == assertion]
        if not back:
            return PARTIAL, f"{receipt.detail}; but the run event does not read back"
        return PASS, f"{receipt.detail}; read back ({back[-1].result})"

    def post_mortem() -> tuple[str, str]:
        stamp = {"time": now, "actor": aspects.ACTOR}
        info = {
            "title": f"Upstream spike {now}",
            "contents": {"text": "Written by `upstream spike`."},
            "status": {"state": "UNPUBLISHED"},
            "created": stamp,
            "lastModified": stamp,
            "relatedAssets": [{"asset": scratch}],
        }
        receipts = changes.receipts(scribe.document(graph, document, info))
        if not all(r.written for r in receipts):
            return PARTIAL, "; ".join(r.detail for r in receipts)
        owned = graph.get_aspects([document], ["ownership"]).get(document, {})
        if aspects.ACTOR not in str(owned.get("ownership")):
            return PARTIAL, f"{receipts[0].detail}; but its owner does not read back"
        return PASS, f"{receipts[0].detail}; with its owner; read back"

    def incident_info(state: str, stage: str) -> dict[str, object]:
        stamp = {"time": now, "actor": "urn:li:corpuser:upstream"}
        return {
            "type": "CUSTOM",
            "customType": "Upstream spike",
            "title": "upstream spike",
            "description": "Raised and resolved by `upstream spike`.",
            "entities": [scratch],
            "priority": 3,
            "assignees": [],
            "status": {"state": state, "stage": stage, "message": "spike", "lastUpdated": stamp},
            "source": {"type": "ASSERTION_FAILURE", "sourceUrn": assertion},
            "created": stamp,
            "startedAt": now,
        }

    def moved(state: str, stage: str) -> Callable[[], tuple[str, str]]:
        def run() -> tuple[str, str]:
            receipt = graph.write_aspect(incident, "incidentInfo", incident_info(state, stage))
            return _read_back(
                graph,
                receipt,
                "incidentInfo",
                lambda v: (
                    (v.get("status") or {}).get("state") == state
                    and (v.get("source") or {}).get("sourceUrn") == assertion
                ),
            )

        return run

    op = graph.operation
    surfaces: list[tuple[str, str, Callable[[], tuple[str, str]]]] = [
        ("search", op("search"), search),
        ("aspects", op("aspects"), read_aspects),
        ("upstream lineage", op("lineage"), upstream),
        ("downstream lineage", op("lineage"), downstream),
        ("timeline", op("timeline"), timeline),
        ("assertion runs", op("assertion_runs"), runs),
        ("upsert an aspect", op("upsert"), upsert),
        ("owner", op("add_owner"), patched("add_owner", "urn:li:corpuser:upstream")),
        ("tag", op("add_tag"), patched("add_tag", "urn:li:tag:upstream-spike")),
        ("glossary term", op("add_term"), patched("add_term", SPIKE_TERM)),
        ("structured property", op("set_structured_property"), structured),
        ("runbook link", op("add_memory"), patched(
            "add_memory", "https://upstream.invalid/runbooks/spike", "Upstream spike runbook")),
        ("column tag", op("add_column_tag"), patched(
            "add_column_tag", "spike_column", "urn:li:tag:upstream-spike")),
        ("domain", op("set_domain"), patched("set_domain", "urn:li:domain:upstream-spike")),
        ("description", op("set_description"), patched(
            "set_description", "Scratch dataset of `upstream spike`, described.")),
        ("custom assertion", op("custom_assertion"), custom_assertion),
        ("assertion result", op("assertion_result"), result),
        ("raise incident", op("raise_incident"), moved("ACTIVE", "TRIAGE")),
        ("resolve incident", op("resolve_incident"), moved("RESOLVED", "FIXED")),
        ("post-mortem document", op("document"), post_mortem),
    ]  # fmt: skip
    out = []
    for name, operation, run in surfaces:
        if mark is not None:
            mark(name)
        try:
            verdict, detail = run()
        except Exception as exc:  # noqa: BLE001 - a spike reports every failure and goes on
            verdict, detail = FAIL, f"{type(exc).__name__}: {str(exc).strip()[:160]}"
        out.append(Surface(name, operation, verdict, detail))
    return out
