"""A refresh rebuilds what changed: the dbt nodes whose code or data differ from the last build
(`warehouse.built_state`) and everything downstream of them, dbt's ``<node>+``, then the steps
that follow every build (ingestion, profiles, the build's outcome). A scenario's fault, an
incident's fix and `upstream heal` each touch a handful of the estate's nodes.

The checks on what it skips: estate.yaml's monitors run on every refresh (their verdict reads
the clock and the observation before, not only the table); a dbt test runs when its model is
rebuilt, or when its code reads the clock. Any other dbt test would give the verdict it gave:
its SQL and the tables it reads are unchanged (`warehouse.built_state`)."""

from __future__ import annotations

from dataclasses import dataclass

import dagster as dg
from dagster_dbt.asset_utils import DAGSTER_DBT_UNIQUE_ID_METADATA_KEY as DBT_ID

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
    checks: frozenset[dg.AssetCheckKey] = frozenset()  # the checks the refresh runs
    source_tests: tuple[str, ...] = ()  # dbt tests on changed sources (no Dagster check)


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
    clocked = built_state.reads_clock(manifest)
    checks = frozenset(
        key
        for key, test in _checks(job).items()
        if key.asset_key in allowed
        and (key.asset_key in selection or test is None or test in clocked)
    )
    return Rebuild(
        sorted(selection, key=lambda k: k.to_user_string()),
        changed,
        built_state.dbt_select(manifest, changed),
        checks,
        tuple(built_state.source_tests(manifest, changed)),
    )


def _checks(job: dg.JobDefinition) -> dict[dg.AssetCheckKey, str | None]:
    """Every check the job can run -> the dbt test it runs (None: not a dbt test)."""
    return {
        spec.key: (spec.metadata or {}).get(DBT_ID)
        for assets_def in job.asset_layer.asset_graph.assets_defs
        for spec in assets_def.check_specs
    }


def subset(job: dg.JobDefinition, rebuild: Rebuild) -> dg.JobDefinition:
    """The job narrowed to the refresh's assets and checks (a check on an asset it does not
    rebuild is selected by its own key: Dagster would leave it out)."""
    return job.get_subset(
        asset_selection=set(rebuild.selection), asset_check_selection=set(rebuild.checks)
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
