"""What Upstream observes, reported into DataHub so DataHub holds every signal.

Profiles (``datasetProfile``: rows, NULLs, means) after every build, and each monitor as an
assertion with run events. Monitors assert on the dataset and name the column in the
definition: DataHub OSS rejects column-level assertion run events.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from upstream_dagster.conformance.proposals import Change
from upstream_dagster.datahub import aspects, changes
from upstream_dagster.datahub.model import (
    Json,
    Receipt,
    SearchQuery,
    Written,
    assertion_properties,
)
from upstream_dagster.datahub.protocol import MetadataGraph


def monitor_assertion_urn(monitor: str, dataset: str, column: str | None) -> str:
    digest = hashlib.sha1(f"{monitor}|{dataset}|{column or ''}".encode()).hexdigest()[:20]
    return f"urn:li:assertion:upstream-{digest}"


@dataclass(frozen=True)
class MonitorReport:
    monitor: str
    rule: str
    dataset: str
    column: str | None
    passed: bool
    message: str
    observed: float | None
    baseline: float | None
    threshold: float
    at_ms: int
    run_id: str
    evaluable: bool = True  # False: reported as ERROR (the monitor could not see its data)

    @property
    def assertion_urn(self) -> str:
        return monitor_assertion_urn(self.monitor, self.dataset, self.column)


def _definition(info: Json) -> tuple[object, ...]:
    """What a monitor's assertion says, however the backend stored it (a GMS keeps Upstream's
    properties in the logic and adds a source)."""
    custom = info.get("customAssertion") or {}
    logic = str(custom.get("logic") or "").splitlines()[:1]
    return (
        custom.get("type"),
        custom.get("entity"),
        logic,
        info.get("description"),
        assertion_properties(info),
    )


def report_monitor(graph: MetadataGraph, r: MonitorReport) -> list[Receipt]:
    urn = r.assertion_urn
    receipts = []
    info = aspects.monitor_assertion(r.monitor, r.rule, r.threshold, r.dataset, r.column)
    current = graph.get_aspects([urn], ["assertionInfo"]).get(urn, {}).get("assertionInfo")
    if current is None or _definition(current) != _definition(info):
        receipts.append(graph.write_aspect(urn, "assertionInfo", info))
    native = {"message": r.message, "threshold": str(r.threshold)}
    if r.observed is not None:
        native["observed"] = repr(r.observed)
    if r.baseline is not None:
        native["baseline"] = repr(r.baseline)
    if r.column:
        native["column"] = r.column
    receipts.append(
        report_run(
            graph, urn, r.dataset, r.passed, native, r.at_ms, r.run_id, r.observed, r.evaluable
        )
    )
    return receipts


def report_run(
    graph: MetadataGraph,
    urn: str,
    dataset: str,
    passed: bool,
    native: dict[str, str],
    at_ms: int,
    run_id: str,
    observed: float | None = None,
    evaluable: bool = True,
) -> Receipt:
    """One assertionRunEvent, asserted on the dataset (OSS rejects column-level run events);
    a check that could not see its data is an ERROR, never a SUCCESS."""
    event = aspects.run_event(urn, dataset, passed, native, at_ms, run_id, observed, evaluable)
    return graph.write_aspect(urn, "assertionRunEvent", event)


def build_assertion_urn(dataset: str) -> str:
    return f"{BUILD_PREFIX}{hashlib.sha1(dataset.encode()).hexdigest()[:20]}"


BUILD_PREFIX = "urn:li:assertion:upstream-build-"


def is_build_check(assertion_urn: str) -> bool:
    """Whether an assertion is a model's build check (Upstream names them so)."""
    return assertion_urn.startswith(BUILD_PREFIX)


def report_builds(
    graph: MetadataGraph, outcomes: dict[str, str | None], at_ms: int, run_id: str
) -> list[Receipt]:
    """Each model the build ran: ``outcomes`` maps its dataset URN to dbt's error, or None when
    it built. A failure is always reported (its check is created on the first one); a success
    only where a check exists, so a model that never failed carries no build check."""
    urns = {d: build_assertion_urn(d) for d in outcomes}
    known = graph.get_aspects(sorted(urns.values()), ["assertionInfo"])
    receipts = []
    for dataset, error in sorted(outcomes.items()):
        urn = urns[dataset]
        exists = bool(known.get(urn, {}).get("assertionInfo"))
        if error is None and not exists:
            continue
        if not exists:
            info = aspects.build_assertion(dataset)
            receipts.append(graph.write_aspect(urn, "assertionInfo", info))
        native = {"message": error or "built"}
        receipts.append(report_run(graph, urn, dataset, error is None, native, at_ms, run_id))
    return receipts


def report_profile(graph: MetadataGraph, urn: str, profile: Json) -> Receipt:
    return graph.write_aspect(urn, "datasetProfile", profile)


def forget_memory(graph: MetadataGraph, properties: tuple[str, ...]) -> list[Written]:
    """Remove the memory properties Upstream wrote, one property at a time through its writer
    (each with its pre-image); other structured properties stay."""
    wanted = {f"urn:li:structuredProperty:{p}" for p in properties}
    urns = graph.search(SearchQuery(entity_type="dataset"))
    written: list[Written] = []
    for urn, found in graph.get_aspects(urns, ["structuredProperties"]).items():
        props = (found.get("structuredProperties") or {}).get("properties", [])
        for prop in sorted({str(p.get("propertyUrn")) for p in props} & wanted):
            written += changes.apply(graph, urn, Change("set_structured_property", (prop,)))
    return written


def template_assertions(
    graph: MetadataGraph, only: Sequence[str] | None = None
) -> list[tuple[str, str, str]]:
    """(assertion, dataset, template) of every assertion a coverage proposal wrote (or of
    ``only`` those URNs): the checks Upstream runs on every build."""
    urns = list(only) if only is not None else graph.search(SearchQuery(entity_type="assertion"))
    urns = [u for u in urns if u.startswith("urn:li:assertion:upstream-")]
    out = []
    for urn, found in sorted(graph.get_aspects(urns, ["assertionInfo"]).items()):
        info = found.get("assertionInfo") or {}
        template = assertion_properties(info).get("upstream_template")
        entity = (info.get("customAssertion") or {}).get("entity")
        if entity and template:
            out.append((urn, str(entity), str(template)))
    return out


def guard_assertions(graph: MetadataGraph) -> list[tuple[str, str, str, str]]:
    """(assertion, dataset, rule, column) of every guard an incident left."""
    urns = [
        u
        for u in graph.search(SearchQuery(entity_type="assertion"))
        if u.startswith("urn:li:assertion:upstream-guard-")
    ]
    out = []
    for urn, found in sorted(graph.get_aspects(urns, ["assertionInfo"]).items()):
        info = found.get("assertionInfo") or {}
        props = assertion_properties(info)
        entity = (info.get("customAssertion") or {}).get("entity")
        if entity and props.get("upstream_guard") and props.get("column"):
            out.append((urn, str(entity), str(props["upstream_guard"]), str(props["column"])))
    return out
