"""An incident's approved fix, as three runs that follow one another (never one launched from
inside another's step):

1. `incident_writeback_job` (`incident_fix`): a reviewer launches it for the incident's
   partition with the verdict's digest; the gate decides; the fix is applied to the deployed
   dbt project.
2. `estate_refresh`: launched by the `incident_fix_rebuilds` sensor, tagged with the incident,
   rebuilds the estate, runs every check and re-ingests into DataHub.
3. `incident_resolution_job` (`incident_resolution`): launched by `incident_rebuilt_resolves`;
   reads the failing check again and resolves the incident only if it passes, writing the
   runbook, memory, tags and guards, each write journaled with its pre-image for undo.

`upstream approve --incident` runs the same three jobs in turn itself (tagged so the sensors
leave that chain alone).
"""

from typing import Any

import dagster as dg
from pydantic import Field

from upstream_dagster import gate
from upstream_dagster.datahub import whoami
from upstream_dagster.datahub.incident_keys import short_id
from upstream_dagster.defs import journal
from upstream_dagster.defs.estate_jobs import estate_refresh_job
from upstream_dagster.defs.instance import WRITEBACK_POOL
from upstream_dagster.defs.launch import (
    GATE,
    HANDOFF_SECONDS,
    REVIEWER,
    LaunchConfig,
    by_sensor,
    tag_run,
)
from upstream_dagster.defs.reliability import incidents
from upstream_dagster.defs.resources import (
    AUTOMATIC_TAG,
    WRITEBACK_TAGS,
    DataHubResource,
    ReviewerToken,
    UpstreamResource,
    writeback_lock,
)
from upstream_dagster.reliability.verdict import Verdict
from upstream_dagster.services import approval, coverage, reviewer
from upstream_dagster.services import incident_fix as fixes
from upstream_dagster.spec.urns import short
from upstream_dagster.state import claims

GROUP = "reliability"
INCIDENT_TAG = "upstream/incident"
# A chain the command line drives itself (it runs each job in turn); the sensors leave it be.
DRIVER_TAG = "upstream/driver"
FIX = dg.AssetKey("incident_fix")


class IncidentApproval(LaunchConfig):
    verdict_digest: str = Field(description="The digest shown on the incident_verdict asset.")
    reviewer: str = Field(description="Who approves; must be listed in policies.approvers.")
    nonce: str = Field(
        default="",
        description="The one-time value shown beside the verdict digest: an approval is good "
        "for one fix.",
    )
    proof: str = Field(
        default="",
        description="Your signature over this approval (`upstream sign`), when estate.yaml "
        "requires signed approvals: proof of who you are, not a secret.",
    )


@dg.asset(
    kinds={"datahub", "dbt"},
    partitions_def=incidents,
    group_name=GROUP,
    pool=WRITEBACK_POOL,
    description="Applies an approved fix to the deployed dbt project (never the tracked "
    "one). Never runs by itself: a reviewer launches it with the verdict's digest. Then "
    "estate_refresh rebuilds, and incident_resolution reads the failing check again.",
)
def incident_fix(
    context: dg.AssetExecutionContext,
    config: IncidentApproval,
    incident_verdict: Verdict,
    upstream: UpstreamResource,
    datahub: DataHubResource,
    reviewer_token: dg.ResourceParam[ReviewerToken],
) -> dg.MaterializeResult[Any]:
    v = incident_verdict
    automatic = context.run.tags.get(AUTOMATIC_TAG) == "true"
    policy, store = upstream.spec().policies, upstream.gate
    request = reviewer.request(
        policy, config.verdict_digest, config.reviewer, automatic, config.proof, config.nonce,
        reviewer_token.value, lambda token: whoami(datahub.target(), token), context.run.tags,
    )  # fmt: skip
    decision = gate.decide(
        policy, request, approval.grounds(store, policy, fixes.subject(v), config.nonce,
                                          upstream.pin)
    )  # fmt: skip
    decided = {"refuse": "refused"}.get(decision.verdict, decision.verdict)
    tag_run(context, {GATE: decided, INCIDENT_TAG: v.key})
    if decision.verdict == "refuse":  # a refusal is an answer, not a failed run
        context.log.error(f"refused: {decision.problem}; fix: {decision.fix}")
        return dg.MaterializeResult(
            metadata={
                "result": f"refused: {decision.problem}",
                "refused": True,
                "fix": decision.fix,
                "rebuild": False,
                "applied": "nothing",
            }
        )
    if decision.verdict == "dry-run":
        return dg.MaterializeResult(
            metadata={"result": decision.problem, "rebuild": False, "applied": "nothing"}
        )
    tag_run(context, {REVIEWER: config.reviewer})
    with writeback_lock(upstream, context, f"incident fix {v.key}") as lock:
        coverage.claim_and_spend(
            store, lock, "fix", v.digest, config.nonce, fixes.claim_key(v), context.run_id,
            config.reviewer,
        )  # fmt: skip
        applied = fixes.apply_fix(upstream.dbt_project(), v)
    context.log.info(f"owners notified: {', '.join(v.owners) or 'no owner in DataHub'}")
    return dg.MaterializeResult(
        metadata={
            "applied": applied.applied,
            "rebuild": applied.rebuild,
            "reviewer": config.reviewer,
            "verdict_digest": v.digest,
        }
    )


@dg.asset(
    kinds={"datahub"},
    partitions_def=incidents,
    group_name=GROUP,
    deps=[incident_fix],
    pool=WRITEBACK_POOL,
    description="After the fix and the rebuild: reads the failing check in DataHub again, "
    "resolves the incident only if it passes, and writes what was learned (runbook, memory "
    "properties, tags, guard assertions), every write with its pre-image for undo.",
)
def incident_resolution(
    context: dg.AssetExecutionContext,
    incident_verdict: Verdict,
    datahub: DataHubResource,
    upstream: UpstreamResource,
) -> dg.MaterializeResult[Any]:
    v = incident_verdict
    store = upstream.gate
    fixed_by = claims.claimed_by(store, fixes.claim_key(v))
    if not fixed_by:
        raise dg.Failure(
            f"no approved fix was applied for incident {v.key}: launch incident_writeback_job "
            "for this partition first"
        )
    immunize = upstream.spec().policies.reliability.immunize_on_resolve
    lock = writeback_lock(upstream, context, f"incident resolution {v.key}")
    with lock, datahub.graph() as graph:
        approver = claims.approver_of(store, fixes.claim_key(v))
        done = fixes.resolve(graph, v, immunize, approver)
    entry = {
        "batch_digest": fixes.claim_key(v),
        "reviewer": journal.latest_for(context.instance, FIX, v.key).get("reviewer", ""),
        "written": done.writes > 0,
        "pre_images": [w.pre_image.as_json() for w in done.written if w.receipt.written],
    }
    timing: dict[str, Any] = (
        {
            # a number, so the UI plots it over the incidents (a partition each); the same
            # figure the post-mortem in DataHub gives
            "time_to_resolve_minutes": dg.MetadataValue.float(round(done.minutes, 1)),
            "resolved_at": dg.MetadataValue.timestamp(done.resolved_ms / 1000),
        }
        if done.resolved
        else {}
    )
    return dg.MaterializeResult(
        metadata={
            "resolved": done.resolved,
            "check_after_fix": done.message,
            **timing,
            "incident_id": short_id(v.key),
            "approved_by": approver or "nobody recorded",
            # a link to the run that applied the fix, not a bare id
            "fixed_by_run": dg.MetadataValue.dagster_run(fixed_by),
            "writes": done.writes,
            "failed_writes": done.failed,
            "receipts": dg.MetadataValue.md(
                "\n".join(
                    f"- {w.receipt.aspect} on {short(w.receipt.urn)}: {w.receipt.detail}"
                    for w in done.written
                )
            ),
            "journal": dg.MetadataValue.json(entry),
        }
    )


writeback_job = dg.define_asset_job(
    "incident_writeback_job",
    selection=dg.AssetSelection.assets(incident_fix),
    tags=WRITEBACK_TAGS,
    description="Apply an approved incident fix to the deployed dbt project. Launch it for the "
    "incident's partition with the verdict digest and your name; the rebuild and the "
    "resolution follow by themselves.",
)
resolution_job = dg.define_asset_job(
    "incident_resolution_job",
    selection=dg.AssetSelection.assets(incident_resolution),
    tags=WRITEBACK_TAGS,
    description="Read the failing check again after a fix and its rebuild; resolve the "
    "incident only if it passes and write what was learned into DataHub.",
)


def _driven(run: dg.DagsterRun) -> bool:
    return run.tags.get(DRIVER_TAG) == "cli"


@dg.run_status_sensor(
    run_status=dg.DagsterRunStatus.SUCCESS,
    minimum_interval_seconds=HANDOFF_SECONDS,
    monitored_jobs=[writeback_job],
    request_jobs=[estate_refresh_job, resolution_job],
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="After an incident's fix was applied: rebuilds the estate (estate_refresh, "
    "tagged with the incident), or resolves at once when the fix changed nothing to rebuild.",
)
def incident_fix_rebuilds(
    context: dg.RunStatusSensorContext,
) -> dg.RunRequest | dg.SkipReason:
    run = context.dagster_run
    key = run.tags.get("dagster/partition")
    if _driven(run) or not key:
        return dg.SkipReason("the command line drives this incident's chain itself")
    meta = journal.latest_for(context.instance, FIX, key, run.run_id)
    if not meta.get("rebuild"):
        if "result" in meta:  # a dry-run: nothing was applied, nothing to resolve
            return dg.SkipReason(str(meta["result"]))
        return dg.RunRequest(
            run_key=f"resolve-{run.run_id}",
            job_name=resolution_job.name,
            partition_key=key,
            tags=by_sensor(
                "incident_fix_rebuilds", f"fix run {run.run_id} changed nothing to build"
            ),
        )
    return dg.RunRequest(
        run_key=f"rebuild-{run.run_id}",
        job_name=estate_refresh_job.name,
        tags={INCIDENT_TAG: key, **by_sensor("incident_fix_rebuilds", f"fix run {run.run_id}")},
    )


@dg.run_status_sensor(
    run_status=dg.DagsterRunStatus.SUCCESS,
    minimum_interval_seconds=HANDOFF_SECONDS,
    monitored_jobs=[estate_refresh_job],
    request_job=resolution_job,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="After the rebuild an incident's fix asked for: resolves the incident "
    "(incident_resolution_job for its partition).",
)
def incident_rebuilt_resolves(
    context: dg.RunStatusSensorContext,
) -> dg.RunRequest | dg.SkipReason:
    run = context.dagster_run
    key = run.tags.get(INCIDENT_TAG)
    if _driven(run) or not key:
        return dg.SkipReason("not a rebuild for an incident's fix")
    why = f"rebuild run {run.run_id} for the fix"
    return dg.RunRequest(
        run_key=f"resolve-{run.run_id}",
        partition_key=key,
        tags=by_sensor("incident_rebuilt_resolves", why),
    )


defs = dg.Definitions(
    assets=[incident_fix, incident_resolution],
    jobs=[writeback_job, resolution_job],
    sensors=[incident_fix_rebuilds, incident_rebuilt_resolves],
)
