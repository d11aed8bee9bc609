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
from upstream_dagster.defs.coverage import auto_writeback_sensor, coverage_defs
from upstream_dagster.defs.estate import estate_assets, estate_nodes
from upstream_dagster.defs.monitors import monitor_checks, profiles_asset
from upstream_dagster.defs.reliability import reliability_defs
from upstream_dagster.defs.resources import datahub_resource
from upstream_dagster.demo.deploy import dbt_executable, ensure_ready
from upstream_dagster.runtime import WRITEBACK_TAGS
from upstream_dagster.spec import load_estate


def build(settings: settings_mod.Settings) -> dg.Definitions:
    manifest = ensure_ready(settings)
    # dagster-dbt runs dbt as a subprocess that inherits this environment.
    os.environ["UPSTREAM_WAREHOUSE"] = str(settings.warehouse)
    raw_feeds, estate_dbt, datahub_metadata = estate_assets(settings, manifest)
    nodes = estate_nodes(manifest)
    profiles = profiles_asset(settings, nodes, [datahub_metadata])
    monitors = monitor_checks(settings, load_estate(settings.estate_file), nodes, profiles.key)
    estate = (raw_feeds, estate_dbt, datahub_metadata, profiles)
    build_job = dg.define_asset_job(
        "estate_build",
        selection=dg.AssetSelection.assets(*estate),
        description="Generate the raw feeds, build every dbt model and test, run the monitors, "
        "profile every relation, and ingest the result into DataHub. `make demo` runs it.",
    )
    refresh_job = dg.define_asset_job(
        "estate_refresh",
        selection=dg.AssetSelection.assets(*estate[1:]),
        description="Rebuild the dbt models over the raw feeds as they are now (for example "
        "after a scenario changed them), run the monitors, profile, and re-ingest into DataHub.",
    )
    score_assets, score_checks = conformance_defs(settings)
    coverage_assets, coverage_checks = coverage_defs(settings)
    proposals, queue, writeback, verify, reset = coverage_assets
    gate_check, verify_check = coverage_checks
    score_job = dg.define_asset_job(
        "score",
        # The blocking gate check must never sit in the nightly job: a failed blocking check
        # fails its whole run. It runs only in the write-back job.
        selection=dg.AssetSelection.assets(*score_assets, proposals, queue).without_checks()
        | dg.AssetSelection.checks(*score_checks),
        description="Score estate.yaml against DataHub: read the graph, compute the dial, rank "
        "the violations by risk, and plan the priced proposals. `upstream score` runs it; the "
        "nightly schedule runs it at 02:00.",
    )
    writeback_job = dg.define_asset_job(
        "coverage_writeback_job",
        selection=dg.AssetSelection.checks(gate_check) | dg.AssetSelection.assets(writeback),
        tags=WRITEBACK_TAGS,
        description="Write an approved batch into DataHub. Launch it from the launchpad with "
        "the batch digest, the approved ids and your name (or `upstream approve`).",
    )
    verify_job = dg.define_asset_job(
        "coverage_verify_job",
        selection=dg.AssetSelection.assets(verify),
        description="Re-read DataHub and check the measured conformance equals the projection.",
    )
    reset_job = dg.define_asset_job(
        "coverage_reset_job",
        selection=dg.AssetSelection.assets(reset),
        description="Undo: restore every aspect the write-backs wrote to its pre-image.",
    )
    nightly = dg.ScheduleDefinition(
        name="nightly_score",
        job=score_job,
        cron_schedule="0 2 * * *",
        execution_timezone="UTC",
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description="The nightly score, so the dial's history plots in the UI.",
    )
    incident_assets, (reliability_job, incident_job, incident_sensor) = reliability_defs(settings)
    return dg.Definitions(
        assets=[*estate, *score_assets, *coverage_assets, *incident_assets],
        asset_checks=[*score_checks, *coverage_checks, *monitors],
        jobs=[
            build_job,
            refresh_job,
            score_job,
            writeback_job,
            verify_job,
            reset_job,
            reliability_job,
            incident_job,
        ],
        schedules=[nightly],
        sensors=[auto_writeback_sensor(settings, writeback_job), incident_sensor],
        resources={
            "datahub": datahub_resource(),
            "dbt": DbtCliResource(
                project_dir=str(settings.dbt_project_dir),
                profiles_dir=str(settings.dbt_project_dir),
                dbt_executable=dbt_executable(),
            ),
        },
        executor=dg.in_process_executor,
    )


@dg.definitions
def defs() -> dg.Definitions:
    return build(settings_mod.load())
