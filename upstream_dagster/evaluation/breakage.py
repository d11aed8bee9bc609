"""`upstream break` and `upstream heal`: apply a scenario to the warehouse and let the estate's
own jobs carry it into DataHub; restore the clean estate, keeping what Upstream learned.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import dagster as dg

from upstream_dagster import clock, runs
from upstream_dagster.datahub import Target, connected
from upstream_dagster.datahub.model import SearchQuery, assertion_properties
from upstream_dagster.datahub.protocol import MetadataGraph
from upstream_dagster.datahub.signals import forget_memory, report_run
from upstream_dagster.definitions import build
from upstream_dagster.defs.estate import estate_nodes
from upstream_dagster.errors import UpstreamError
from upstream_dagster.evaluation.faults import apply_faults
from upstream_dagster.evaluation.scenario import Scenario
from upstream_dagster.settings import Settings
from upstream_dagster.warehouse.dbt_project import DbtProject

MEMORY_PROPERTIES = ("fragilityScore", "lastRootCause", "mttrMinutes", "knownFailureModes")


@dataclass(frozen=True)
class BreakReport:
    scenario: str
    statements: list[str]
    skipped: list[str]
    flaky: list[str]
    run_id: str


def _refresh(settings: Settings, skip_tables: set[str]) -> dg.ExecuteInProcessResult:
    selection = None
    if skip_tables:
        nodes = estate_nodes(DbtProject.of(settings).manifest())
        unknown = skip_tables - {n.table for n, _ in nodes}
        if unknown:
            raise UpstreamError(
                f"skip_model names {', '.join(sorted(unknown))}, which is not a dbt model",
                "name the model's relation as schema.table",
            )
        skipped = {key for n, key in nodes if n.table in skip_tables}
        job = build(settings).resolve_job_def("estate_refresh")
        selection = [k for k in job.asset_layer.executable_asset_keys if k not in skipped]
    return runs.run_job(settings, "estate_refresh", selection=selection)


def _monitor_assertions(graph: MetadataGraph, monitor: str) -> list[tuple[str, str]]:
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
        raise UpstreamError(
            f"no assertion in DataHub belongs to monitor {monitor!r}",
            "name a monitor from the monitors block of estate.yaml, after a build ran it",
        )
    urn, dataset = found[0]
    report_run(graph, urn, dataset, False, {"message": "check timed out"}, at_ms, run_id)
    return [urn]


def break_estate(settings: Settings, scenario: Scenario) -> BreakReport:
    statements = apply_faults(settings.warehouse, list(scenario.faults), clock.now())
    skip = {f.table.lower() for f in scenario.faults if f.kind == "skip_model"}
    result = _refresh(settings, skip)
    flagged = []
    if scenario.flaky:
        with connected(Target.of(settings)) as graph:
            for name in scenario.flaky:
                flagged += report_flaky(graph, name, clock.observed_ms(), result.run_id)
    (settings.state_dir / "scenario.json").write_text(
        json.dumps({"scenario": scenario.name, "statements": statements}, indent=2)
    )
    return BreakReport(scenario.name, statements, sorted(skip), flagged, result.run_id)


def heal_estate(settings: Settings, forget: bool = False) -> int:
    """Rebuild the clean estate through the estate_build job; forget memory when asked.

    The deployed dbt project is re-deployed from the tracked one first, so a fix applied to the
    deployed copy does not hide the next occurrence. Returns the memory properties removed.
    """
    project = DbtProject.of(settings)
    project.deploy(force=True)
    project.parse()
    runs.run_job(settings, "estate_build")
    (settings.state_dir / "scenario.json").unlink(missing_ok=True)
    if not forget:
        return 0
    with connected(Target.of(settings)) as graph:
        return sum(1 for w in forget_memory(graph, MEMORY_PROPERTIES) if w.receipt.written)
