"""The composition root: one Definitions for the code location, merged from each area's own.

Loaded lazily (``@dg.definitions``) so that importing this module does no I/O; the dbt project is
deployed (and parsed when it changed) when Dagster loads the code location.
"""

from __future__ import annotations

import os

import dagster as dg

from upstream_dagster import settings as settings_mod
from upstream_dagster.defs import (
    conformance,
    coverage,
    notify,
    reliability,
    remediation,
    undo,
    watch,
)
from upstream_dagster.defs.progress import LOGGERS
from upstream_dagster.defs.resources import fixed, resources
from upstream_dagster.spec import load_estate
from upstream_dagster.warehouse.dbt_project import DbtProject, dbt_executable

# The jobs a reviewer's commands run (score, plan, approve, verify, reset): they read and write
# DataHub only, so they load without the dbt project and without dagster-dbt.
CORE_JOBS = frozenset(
    {"score", "coverage_writeback_job", "coverage_verify_job", "coverage_reset_job"}
)


def core(settings: settings_mod.Settings) -> dg.Definitions:
    """The conformance and coverage areas alone: no dbt project deployed or parsed, no
    dagster-dbt imported (its import is most of a command's start-up)."""
    return dg.Definitions.merge(
        conformance.defs,
        coverage.defs,
        undo.defs,
        notify.defs,
        watch.defs,
        dg.Definitions(
            resources=resources(settings), executor=dg.in_process_executor, loggers=LOGGERS
        ),
    )


def build(settings: settings_mod.Settings) -> dg.Definitions:
    """The whole code location: the estate (from the dbt project's manifest) and every area."""
    # Imported here, not at the top: dagster-dbt is heavy, and `core` must not pay for it.
    from dagster_dbt import DbtCliResource

    from upstream_dagster.defs.estate import estate_defs, loads_feeds

    project = DbtProject.of(settings)
    project.ensure_ready()
    # dagster-dbt runs dbt as a subprocess that inherits this environment.
    os.environ["UPSTREAM_WAREHOUSE"] = str(settings.warehouse)
    dbt = DbtCliResource(
        project_dir=str(project.project_dir),
        profiles_dir=str(project.project_dir),
        dbt_executable=dbt_executable(),
    )
    manifest = project.manifest()
    return dg.Definitions.merge(
        estate_defs(
            manifest,
            load_estate(settings.estate_file),
            loads_feeds(manifest, settings.feeds_sql),
        ),
        conformance.defs,
        coverage.defs,
        undo.defs,
        notify.defs,
        watch.defs,
        reliability.defs,
        remediation.defs,
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
