"""The composition root: one Definitions for the code location.

Loaded lazily (``@dg.definitions``) so that importing this module does no I/O; the dbt project is
deployed and parsed when Dagster loads the code location.
"""

from __future__ import annotations

import os

import dagster as dg
from dagster_dbt import DbtCliResource

from upstream_dagster import settings as settings_mod
from upstream_dagster.defs.conformance import conformance_defs
from upstream_dagster.defs.estate import estate_assets
from upstream_dagster.demo.deploy import ensure_ready


def build(settings: settings_mod.Settings) -> dg.Definitions:
    manifest = ensure_ready(settings)
    # dagster-dbt runs dbt as a subprocess that inherits this environment.
    os.environ["UPSTREAM_WAREHOUSE"] = str(settings.warehouse)
    raw_feeds, estate_dbt, datahub_metadata = estate_assets(settings, manifest)
    build_job = dg.define_asset_job(
        "estate_build",
        selection=dg.AssetSelection.assets(raw_feeds, estate_dbt, datahub_metadata),
        description="Generate the raw feeds, build every dbt model and test, and ingest the "
        "result into DataHub. This is what `make demo` runs.",
    )
    refresh_job = dg.define_asset_job(
        "estate_refresh",
        selection=dg.AssetSelection.assets(estate_dbt, datahub_metadata),
        description="Rebuild the dbt models over the raw feeds as they are now (for example "
        "after a scenario changed them) and re-ingest into DataHub.",
    )
    score_assets, score_checks = conformance_defs(settings)
    score_job = dg.define_asset_job(
        "score",
        selection=dg.AssetSelection.assets(*score_assets),
        description="Score estate.yaml against DataHub: read the graph, compute the dial, rank "
        "the violations by risk. `upstream score` runs it; the nightly schedule runs it at 02:00.",
    )
    nightly = dg.ScheduleDefinition(
        name="nightly_score",
        job=score_job,
        cron_schedule="0 2 * * *",
        execution_timezone="UTC",
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description="The nightly score, so the dial's history plots in the UI.",
    )
    return dg.Definitions(
        assets=[raw_feeds, estate_dbt, datahub_metadata, *score_assets],
        asset_checks=score_checks,
        jobs=[build_job, refresh_job, score_job],
        schedules=[nightly],
        resources={
            "dbt": DbtCliResource(
                project_dir=str(settings.dbt_project_dir),
                profiles_dir=str(settings.dbt_project_dir),
            )
        },
        executor=dg.in_process_executor,
    )


@dg.definitions
def defs() -> dg.Definitions:
    return build(settings_mod.load())
