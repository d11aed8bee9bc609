"""What Upstream observes, reported into DataHub so DataHub holds every signal.

Profiles (``datasetProfile``: rows, NULLs, means) after every build, and each monitor as an
assertion with run events. Monitors assert on the dataset and name the column in the
definition: DataHub OSS rejects column-level assertion run events.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from upstream_dagster.datahub.model import Json, Receipt, assertion_properties
from upstream_dagster.datahub.protocol import MetadataGraph

DBT_PLATFORM = "urn:li:dataPlatform:dbt"


def dbt_urn(database: str, schema: str, name: str) -> str:
    """The URN DataHub's dbt source gives a dbt node (the primary of a twin pair)."""
    return f"urn:li:dataset:({DBT_PLATFORM},{database}.{schema}.{name},PROD)"


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

    @property
    def assertion_urn(self) -> str:
        return monitor_assertion_urn(self.monitor, self.dataset, self.column)


def _info(r: MonitorReport) -> Json:
    custom: Json = {
        "type": f"Upstream monitor: {r.rule}",
        "entity": r.dataset,
        "logic": f"{r.rule} threshold={r.threshold}",
    }
    if r.column:
        custom["field"] = f"urn:li:schemaField:({r.dataset},{r.column})"
    return {
        "type": "CUSTOM",
        "customAssertion": custom,
        "description": f"Upstream monitor {r.monitor}: {r.rule.replace('_', ' ')}"
        + (f" on {r.column}" if r.column else ""),
        "customProperties": {"upstream_monitor": r.monitor, "upstream_rule": r.rule},
    }


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
    info = _info(r)
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
        report_run(graph, urn, r.dataset, r.passed, native, r.at_ms, r.run_id, r.observed)
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
) -> Receipt:
    """One assertionRunEvent, asserted on the dataset (OSS rejects column-level run events)."""
    event: Json = {
        "timestampMillis": at_ms,
        "runId": run_id,
        "asserteeUrn": dataset,
        "assertionUrn": urn,
        "status": "COMPLETE",
        "result": {"type": "SUCCESS" if passed else "FAILURE", "nativeResults": native},
    }
    if observed is not None:
        event["result"]["actualAggValue"] = observed
    return graph.write_aspect(urn, "assertionRunEvent", event)


def report_profile(graph: MetadataGraph, urn: str, profile: Json) -> Receipt:
    return graph.write_aspect(urn, "datasetProfile", profile)


def _monitor_assertions(graph: MetadataGraph, monitor: str) -> list[tuple[str, str]]:
    from upstream_dagster.datahub.model import SearchQuery

    urns = graph.search(SearchQuery(entity_type="assertion"))
    infos = graph.get_aspects(urns, ["assertionInfo"])
    out = []
    for urn in sorted(urns):
        info = infos.get(urn, {}).get("assertionInfo") or {}
        if assertion_properties(info).get("upstream_monitor") == monitor:
            out.append((urn, str((info.get("customAssertion") or {}).get("entity", ""))))
    return out


def report_flaky(graph: MetadataGraph, monitor: str, at_ms: int, run_id: str) -> list[str]:
    """A scenario's flaky check: the monitor's first assertion reports a failure once, with no
    change in the data (a timeout, a lost connection)."""
    found = _monitor_assertions(graph, monitor)
    if not found:
        from upstream_dagster.errors import UpstreamError

        raise UpstreamError(
            f"no assertion in DataHub belongs to monitor {monitor!r}",
            "name a monitor from the monitors block of estate.yaml, after a build ran it",
        )
    urn, dataset = found[0]
    report_run(graph, urn, dataset, False, {"message": "check timed out"}, at_ms, run_id)
    return [urn]


def forget_memory(graph: MetadataGraph, properties: tuple[str, ...]) -> int:
    """Remove the memory properties Upstream wrote; other structured properties stay."""
    from upstream_dagster.datahub.model import SearchQuery

    wanted = {f"urn:li:structuredProperty:{p}" for p in properties}
    urns = graph.search(SearchQuery(entity_type="dataset"))
    removed = 0
    for urn, aspects in graph.get_aspects(urns, ["structuredProperties"]).items():
        props = (aspects.get("structuredProperties") or {}).get("properties", [])
        keep = [p for p in props if p.get("propertyUrn") not in wanted]
        if len(keep) != len(props):
            graph.write_aspect(urn, "structuredProperties", {"properties": keep})
            removed += len(props) - len(keep)
    return removed


def guard_assertions(graph: MetadataGraph) -> list[tuple[str, str, str, str]]:
    """(assertion, dataset, rule, column) of every guard an incident left."""
    from upstream_dagster.datahub.model import SearchQuery

    urns = [
        u
        for u in graph.search(SearchQuery(entity_type="assertion"))
        if u.startswith("urn:li:assertion:upstream-guard-")
    ]
    out = []
    for urn, aspects in sorted(graph.get_aspects(urns, ["assertionInfo"]).items()):
        info = aspects.get("assertionInfo") or {}
        props = assertion_properties(info)
        entity = (info.get("customAssertion") or {}).get("entity")
        if entity and props.get("upstream_guard") and props.get("column"):
            out.append((urn, str(entity), str(props["upstream_guard"]), str(props["column"])))
    return out
