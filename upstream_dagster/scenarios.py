"""`upstream break` and `upstream heal`: apply a scenario to the warehouse and let the estate's
own jobs carry it into DataHub; restore the clean estate, keeping what Upstream learned.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from upstream_dagster import clock
from upstream_dagster.errors import UpstreamError
from upstream_dagster.reliability.scenario import Scenario
from upstream_dagster.settings import Settings

MEMORY_PROPERTIES = ("fragilityScore", "lastRootCause", "mttrMinutes", "knownFailureModes")


@dataclass(frozen=True)
class BreakReport:
    scenario: str
    statements: list[str]
    skipped: list[str]
    flaky: list[str]
    run_id: str


def _refresh(settings: Settings, skip_tables: set[str]) -> Any:
    from upstream_dagster.cli import run_job
    from upstream_dagster.definitions import build
    from upstream_dagster.defs.estate import estate_nodes
    from upstream_dagster.demo.deploy import manifest_path

    selection = None
    if skip_tables:
        nodes = estate_nodes(manifest_path(settings))
        unknown = skip_tables - {n.table for n in nodes}
        if unknown:
            raise UpstreamError(
                f"skip_model names {', '.join(sorted(unknown))}, which is not a dbt model",
                "name the model's relation as schema.table",
            )
        skipped = {n.key for n in nodes if n.table in skip_tables}
        job = build(settings).resolve_job_def("estate_refresh")
        selection = [k for k in job.asset_layer.executable_asset_keys if k not in skipped]
    return run_job(settings, "estate_refresh", selection=selection)


def break_estate(settings: Settings, scenario: Scenario) -> BreakReport:
    from upstream_dagster.datahub import open_graph
    from upstream_dagster.datahub.signals import report_flaky
    from upstream_dagster.warehouse import apply_faults

    statements = apply_faults(settings.warehouse, list(scenario.faults), clock.now())
    skip = {f.table.lower() for f in scenario.faults if f.kind == "skip_model"}
    result = _refresh(settings, skip)
    flagged = []
    if scenario.flaky:
        graph = open_graph(settings)
        try:
            for name in scenario.flaky:
                flagged += report_flaky(graph, name, clock.observed_ms(), result.run_id)
        finally:
            graph.close()
    (settings.state_dir / "scenario.json").write_text(
        json.dumps({"scenario": scenario.name, "statements": statements}, indent=2)
    )
    return BreakReport(scenario.name, statements, sorted(skip), flagged, result.run_id)


def heal_estate(settings: Settings, forget: bool = False) -> int:
    """Rebuild the clean estate through the estate_build job; forget memory when asked.

    The deployed dbt project is re-deployed from the tracked one first, so a fix applied to the
    deployed copy does not hide the next occurrence. Returns the memory properties removed.
    """
    from upstream_dagster.cli import run_job
    from upstream_dagster.demo.deploy import deploy_project, prepare_manifest

    deploy_project(settings, force=True)
    prepare_manifest(settings)
    run_job(settings, "estate_build")
    (settings.state_dir / "scenario.json").unlink(missing_ok=True)
    if not forget:
        return 0
    from upstream_dagster.datahub import open_graph
    from upstream_dagster.datahub.signals import forget_memory

    graph = open_graph(settings)
    try:
        return forget_memory(graph, MEMORY_PROPERTIES)
    finally:
        graph.close()
