"""The composition root: one Definitions for the code location, merged from each area's own.

Loaded lazily (``@dg.definitions``) so that importing this module does no I/O; the dbt project is
deployed (and parsed when it changed) when Dagster loads the code location.
"""

from __future__ import annotations

import os
import re

import dagster as dg

from upstream_dagster import settings as settings_mod
from upstream_dagster.defs import conformance, coverage, notify, undo, watch
from upstream_dagster.defs.progress import LOGGERS
from upstream_dagster.defs.resources import fixed, resources
from upstream_dagster.errors import UpstreamError
from upstream_dagster.spec import load_estate
from upstream_dagster.warehouse.dbt_project import DbtProject, build_executable

# The jobs a reviewer's commands run (score, plan, approve, verify, reset): they read and write
# DataHub only, so they load without the dbt project and without dagster-dbt.
CORE_JOBS = frozenset(
    {"score", "coverage_writeback_job", "coverage_verify_job", "coverage_reset_job"}
)


def owners(settings: settings_mod.Settings) -> list[str]:
    """Who owns Upstream's own assets in Dagster: the approvers estate.yaml lists (they act on
    what those assets propose), as Dagster names owners (an address, or ``team:NAME``)."""
    try:
        approvers = load_estate(settings.estate_file).policies.approvers
    except UpstreamError:  # a bad estate file fails the estate_spec asset, file:line and fix
        return []
    return [a if "@" in a else "team:" + re.sub(r"[^A-Za-z0-9_.-]+", "-", a) for a in approvers]


def owned(defs: dg.Definitions, names: list[str]) -> dg.Definitions:
    """``defs`` with ``names`` as the owners of every asset it defines."""
    if not names:
        return defs
    assets = [
        a.map_asset_specs(lambda spec: spec.replace_attributes(owners=names))
        if isinstance(a, dg.AssetsDefinition)
        else a
        for a in defs.assets or []
    ]
    return dg.Definitions(
        assets=assets,
        asset_checks=defs.asset_checks,
        jobs=defs.jobs,
        schedules=defs.schedules,
        sensors=defs.sensors,
    )


def core(settings: settings_mod.Settings) -> dg.Definitions:
    """The conformance and coverage areas alone: no dbt project deployed or parsed, no
    dagster-dbt imported (its import is most of a command's start-up)."""
    names = owners(settings)
    return dg.Definitions.merge(
        owned(conformance.defs, names),
        owned(coverage.defs, names),
        owned(undo.defs, names),
        notify.defs,
        watch.defs,
        dg.Definitions(
            resources=resources(settings), executor=dg.in_process_executor, loggers=LOGGERS
        ),
    )


def build(settings: settings_mod.Settings) -> dg.Definitions:
    """The whole code location: the estate (from the dbt project's manifest) and every area."""
    # Imported here, not at the top: dagster-dbt is heavy, and `core` must not pay for it (nor
    # for the reliability and remediation areas, which no job of `core` runs).
    from upstream_dagster.defs import reliability, remediation
    from upstream_dagster.defs.estate import DeployedDbt, estate_defs, loads_feeds

    project = DbtProject.of(settings)
    project.ensure_ready()
    # dagster-dbt runs dbt as a subprocess that inherits this environment, in the project.
    os.environ["UPSTREAM_WAREHOUSE"] = project.warehouse_path
    dbt = DeployedDbt(
        project_dir=str(project.project_dir),
        profiles_dir=str(project.project_dir),
        dbt_executable=build_executable(),
    )
    manifest = project.manifest()
    names = owners(settings)
    return dg.Definitions.merge(
        estate_defs(
            manifest,
            load_estate(settings.estate_file),
            loads_feeds(manifest, settings.feeds_sql),
        ),
        owned(conformance.defs, names),
        owned(coverage.defs, names),
        owned(undo.defs, names),
        notify.defs,
        watch.defs,
        owned(reliability.defs, names),
        owned(remediation.defs, names),
        dg.Definitions(
            resources={
                **resources(settings),
                "dbt": fixed(dbt, "The deployed dbt project: fixed by the deployment"),
            },
            executor=dg.in_process_executor,
            loggers=LOGGERS,
        ),
    )


@dg.definitions
def defs() -> dg.Definitions:
    return build(settings_mod.load())
