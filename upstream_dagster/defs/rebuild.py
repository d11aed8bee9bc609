"""A refresh rebuilds what changed: the dbt nodes whose code or data differ from the last build
(`warehouse.built_state`) and everything downstream of them, dbt's ``<node>+``, then the steps
that follow every build (ingestion, profiles, the build's outcome). A scenario's fault, an
incident's fix and `upstream heal` each touch a handful of the estate's nodes."""

from __future__ import annotations

from dataclasses import dataclass

import dagster as dg

from upstream_dagster.defs.estate import node_keys
from upstream_dagster.settings import Settings
from upstream_dagster.warehouse import built_state
from upstream_dagster.warehouse.dbt_project import DbtProject

DBT_STEP = "estate_dbt"


@dataclass(frozen=True)
class Rebuild:
    selection: list[dg.AssetKey]
    changed: set[str]  # the dbt nodes that differ from the last build
    select: str  # the same as dbt's selection syntax


def plan(
    settings: Settings, job: dg.JobDefinition, given: list[dg.AssetKey] | None
) -> Rebuild | None:
    """What a refresh rebuilds, within ``given`` when the caller narrowed it (None: all of it,
    for nothing was recorded, a materialization changed, or nothing differs)."""
    project = DbtProject.of(settings)
    changed = built_state.changed(project, built_state.load(settings.state_dir))
    if not changed:
        return None
    manifest = project.manifest()
    keys = node_keys(manifest)
    rebuilt = {keys[u] for u in built_state.downstream(manifest, changed) if u in keys}
    every_node = set(keys.values())
    executable = job.asset_layer.executable_asset_keys
    allowed = set(given) if given is not None else set(executable)
    selection = [k for k in executable if k in allowed and (k in rebuilt or k not in every_node)]
    return Rebuild(
        sorted(selection, key=lambda k: k.to_user_string()),
        changed,
        built_state.dbt_select(manifest, changed),
    )


def record(settings: Settings, result: dg.ExecuteInProcessResult, rebuild: Rebuild | None) -> None:
    """After a build whose dbt step ran: what the warehouse now reflects (see `built_state`)."""
    ran = {e.step_key for e in result.all_events if e.is_step_success}
    if DBT_STEP not in ran:
        return
    built_state.record(
        DbtProject.of(settings),
        settings.state_dir,
        settings.artifacts_dir / "run_results.json",
        rebuild.changed if rebuild else None,
    )
