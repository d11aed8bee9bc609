"""`upstream break`: apply a scenario to the warehouse and let the estate's own refresh carry it
into DataHub (`upstream heal`, which undoes it, is `upstream_dagster.healing`).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import dagster as dg

from upstream_dagster import clock, runs
from upstream_dagster.datahub import Target, connected
from upstream_dagster.datahub.model import SearchQuery, assertion_properties
from upstream_dagster.datahub.protocol import MetadataGraph
from upstream_dagster.definitions import build
from upstream_dagster.errors import UpstreamError
from upstream_dagster.evaluation.faults import apply_faults, model_sql
from upstream_dagster.evaluation.scenario import Fault, Scenario
from upstream_dagster.evaluation.scenario_apply import apply_metadata, report_flaky, set_warn
from upstream_dagster.settings import Settings
from upstream_dagster.spec.loader import load_estate
from upstream_dagster.warehouse import duckdb_warehouse as wh
from upstream_dagster.warehouse.dbt_project import DbtProject
from upstream_dagster.warehouse.names import renamed_at


@dataclass(frozen=True)
class BreakReport:
    scenario: str
    statements: list[str]
    skipped: list[str]
    flaky: list[str]
    run_id: str
    build_failed: bool = False  # dbt could not build a model: a loud failure


def _refresh(settings: Settings, skip_tables: set[str]) -> dg.ExecuteInProcessResult:
    selection = None
    if skip_tables:
        # dagster-dbt names the keys; imported only here, so the command line starts light
        from upstream_dagster.defs.estate import estate_nodes

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
    # A fault that breaks the build is a loud failure, not a broken scenario: the refresh
    # reported it into DataHub before it failed. A skipped model is a nightly build that
    # rebuilt everything but it (its upstreams included), not a refresh of what changed.
    return runs.run_job(
        settings,
        "estate_refresh",
        selection=selection,
        loud_build_ok=True,
        targeted=selection is None,
    )


def monitor_assertions(graph: MetadataGraph, monitor: str) -> list[tuple[str, str]]:
    urns = graph.search(SearchQuery(entity_type="assertion"))
    infos = graph.get_aspects(urns, ["assertionInfo"])
    out = []
    for urn in sorted(urns):
        info = infos.get(urn, {}).get("assertionInfo") or {}
        if assertion_properties(info).get("upstream_monitor") == monitor:
            out.append((urn, str((info.get("customAssertion") or {}).get("entity", ""))))
    return out


def _model_edits(settings: Settings, faults: list[Fault]) -> dict[Path, str]:
    """The deployed model files the code-change faults rewrite, and their new text (computed
    before anything is written, so a fault that cannot apply changes nothing)."""
    project = DbtProject.of(settings)
    with wh.connect(settings.warehouse) as con:
        tables = wh.relations(con)
    edits: dict[Path, str] = {}
    for fault in faults:
        node = project.node_of(fault.table.lower())
        assert node is not None  # _is_model said so
        path = project.project_dir / str(node["original_file_path"])
        cols = tables.get(fault.table.lower())
        if cols is None:
            raise UpstreamError(
                f"the model {fault.table} has no table in the warehouse yet",
                "build the estate first (`make demo`)",
            )
        text = edits.get(path) or path.read_text()
        edits[path] = model_sql(fault, cols, text, clock.now())
    return edits


def _is_model(project: DbtProject, fault: Fault) -> bool:
    if fault.kind == "skip_model":
        return False
    node = project.node_of(fault.table.lower())
    return node is not None and node["resource_type"] == "model"


def _seed_files(project: DbtProject, faults: list[Fault]) -> dict[str, Path]:
    """relation -> the deployed CSV of every dbt seed a fault touches. The build reloads a seed
    from its CSV, so a fault written only to the table would be undone by the next build."""
    out = {}
    for fault in faults:
        node = project.node_of(fault.table.lower())
        if node is None or node["resource_type"] != "seed":
            continue
        if fault.kind in ("change_type", "skip_model"):
            raise UpstreamError(
                f"a {fault.kind} fault on the dbt seed {fault.table} cannot stick: dbt infers a "
                "seed's types from its CSV and always loads it",
                "change the seed's column_types in dbt_project.yml, or fault a model or a feed",
            )
        out[fault.table.lower()] = project.project_dir / str(node["original_file_path"])
    return out


def break_estate(settings: Settings, scenario: Scenario) -> BreakReport:
    """Apply the scenario: faults on feeds to the warehouse (and a dbt seed's to its CSV too),
    faults on models to their code, a test's severity to the deployed project, metadata-only
    changes to DataHub, and let the estate's own refresh carry the result into DataHub. A case
    that started days ago runs one refresh a day from then, on the clock of that day."""
    project = DbtProject.of(settings)
    data_faults = [f for f in scenario.faults if f.kind != "metadata"]
    in_code = [f for f in data_faults if _is_model(project, f)]
    edits = _model_edits(settings, in_code)
    in_data = [f for f in data_faults if f not in in_code]
    seeds = _seed_files(project, in_data)
    budgets = load_estate(settings.estate_file).policies.reliability.budgets
    days = scenario.started_days_ago or 0
    with _clock_at(days):
        statements = apply_faults(
            settings.warehouse, in_data, clock.now(), budgets.query_seconds, budgets.query_memory_mb
        )
    for path, text in edits.items():
        path.write_text(text)
        statements.append(f"-- rewrote {path.relative_to(project.project_dir)}")
    with wh.connect(settings.warehouse) as con:
        for table, csv_file in sorted(seeds.items()):
            wh.export_csv(con, table, csv_file)
            statements.append(
                f"-- wrote {table} back to {csv_file.relative_to(project.project_dir)}"
            )
    statements += set_warn(project, scenario.warn)
    skip = {f.table.lower() for f in scenario.faults if f.kind == "skip_model"}
    for ago in range(days, 0, -1):  # the daily builds since the faults landed
        with _clock_at(ago):
            _refresh(settings, skip)
    result = _refresh(settings, skip)
    flagged = []
    metadata = [f for f in scenario.faults if f.kind == "metadata"]
    if scenario.flaky or metadata:
        renamed = renamed_at(settings.dbt_manifest)
        with connected(Target.of(settings)) as graph:
            statements += apply_metadata(graph, metadata, renamed)
            for check in scenario.named_as_in_datahub(renamed).flaky_checks:
                flagged.append(report_flaky(graph, check, clock.observed_ms(), result.run_id))
    (settings.state_dir / "scenario.json").write_text(
        json.dumps({"scenario": scenario.name, "statements": statements}, indent=2)
    )
    return BreakReport(
        scenario.name, statements, sorted(skip), flagged, result.run_id, not result.success
    )


@contextlib.contextmanager
def _clock_at(days_ago: int) -> Iterator[None]:
    """The one clock moved back ``days_ago`` days for what runs inside (0: as it is)."""
    if not days_ago:
        yield
        return
    saved = os.environ.get(clock.CLOCK_ENV)
    os.environ[clock.CLOCK_ENV] = (clock.now() - timedelta(days=days_ago)).isoformat()
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(clock.CLOCK_ENV, None)
        else:
            os.environ[clock.CLOCK_ENV] = saved
