"""DataHub changed: score again.

The ``observe_datahub`` schedule observes the DataHub source asset every 15 minutes (its data
version is a digest of what DataHub holds: datasets, twins, lineage, assertions and their
latest results, and every dataset's descriptions, domains, terms, tags and owners). The
``datahub_changed`` sensor launches the score job when the newest observed version differs from
the one it last scored, so the dial follows DataHub between nightly scores whoever changed it
(an ingestion, a steward in the DataHub UI, a write-back)."""

from __future__ import annotations

import dagster as dg

from upstream_dagster.defs.conformance import datahub_graph, score_job
from upstream_dagster.defs.launch import LAUNCHED_BY, by_sensor

DATAHUB = dg.AssetKey("datahub")
VERSION_TAG = "dagster/data_version"  # where Dagster keeps an observation's data version

observe_job = dg.define_asset_job(
    "observe_datahub",
    selection=dg.AssetSelection.assets(datahub_graph.key),
    description="Observe the DataHub source asset: record what DataHub holds as a data version.",
)
observe_schedule = dg.ScheduleDefinition(
    name="observe_datahub_schedule",
    job=observe_job,
    cron_schedule="*/15 * * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    tags={LAUNCHED_BY: "schedule:observe_datahub_schedule"},
    description="Observe DataHub every 15 minutes; datahub_changed scores when it changed.",
)


def newest_version(instance: dg.DagsterInstance) -> str | None:
    record = instance.get_latest_data_version_record(DATAHUB, is_source=True)
    observed = record.asset_observation if record is not None else None
    return observed.tags.get(VERSION_TAG) if observed is not None else None


@dg.sensor(
    job=score_job,
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Launches the score job when the DataHub source asset's newest observed data "
    "version differs from the one last scored.",
)
def datahub_changed(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
    version = newest_version(context.instance)
    if version is None:
        return dg.SkipReason(
            "DataHub has not been observed yet: the observe_datahub schedule observes it every "
            "15 minutes (or materialize the datahub source asset's observation in the UI)"
        )
    if version == context.cursor:
        return dg.SkipReason(f"DataHub unchanged since the last score (data version {version})")
    if context.cursor is None:  # the first version seen is where watching starts
        return dg.SensorResult(
            skip_reason=f"watching DataHub from data version {version}", cursor=version
        )
    return dg.SensorResult(
        run_requests=[
            dg.RunRequest(
                run_key=f"datahub-{version}",
                tags={
                    "upstream/trigger": "datahub",
                    **by_sensor("datahub_changed", f"DataHub moved to {version}"),
                },
            )
        ],
        cursor=version,
    )


defs = dg.Definitions(jobs=[observe_job], schedules=[observe_schedule], sensors=[datahub_changed])
