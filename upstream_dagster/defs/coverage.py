"""The coverage controller in Dagster: plan -> ratify -> actuate -> verify, and reset to undo.

`proposals` and `approval_queue` are planned in the score job. The write-back runs in a job of
its own that holds the blocking check `batch_is_priced_and_current` and `coverage_writeback`,
which never auto-materializes: a reviewer launches it with a typed config. What may be written
is decided by `upstream_dagster.gate.decide`, with the policy from estate.yaml.
"""

from typing import Any

import dagster as dg
from pydantic import Field

from upstream_dagster import gate
from upstream_dagster.conformance.context import MetadataContext
from upstream_dagster.conformance.plan import Plan
from upstream_dagster.datahub import whoami
from upstream_dagster.defs import journal
from upstream_dagster.defs.batch_view import plan_metadata
from upstream_dagster.defs.instance import WAREHOUSE_POOL, WRITEBACK_POOL
from upstream_dagster.defs.launch import BATCH, GATE, REVIEWER, LaunchConfig, by_sensor, tag_run
from upstream_dagster.defs.presentation import receipts_table
from upstream_dagster.defs.resources import (
    AUTOMATIC_TAG,
    WRITEBACK_TAGS,
    DataHubResource,
    ReviewerToken,
    UpstreamResource,
    WarehouseResource,
    writeback_lock,
)
from upstream_dagster.errors import UpstreamError
from upstream_dagster.services import approval, coverage, reviewer
from upstream_dagster.spec import EstateSpec
from upstream_dagster.state import approvals, claims

GROUP = "coverage"
AUTO_REVIEWER = "upstream-auto"


class WritebackConfig(LaunchConfig):
    batch_digest: str = Field(description="The digest shown on the proposals asset.")
    approve: list[str] = Field(description="Proposal ids to write, or [all].")
    reviewer: str = Field(description="Who approves; must be listed in policies.approvers.")
    reject: list[str] = Field(default_factory=list, description="Proposal ids to reject.")
    reject_reason: str = Field(default="", description="Why, recorded with the rejection.")
    nonce: str = Field(
        default="",
        description="The one-time value shown beside the digest on the proposals asset: an "
        "approval is good for one write.",
    )
    proof: str = Field(
        default="",
        description="Your signature over this approval (`upstream sign`), when estate.yaml "
        "requires signed approvals: proof of who you are, not a secret.",
    )


def _context(upstream: UpstreamResource, warehouse: WarehouseResource) -> coverage.PlanInputs:
    """What planning reads besides DataHub: rejected ids, the dbt model files' authors, and
    the warehouse a proposed assertion would run in."""
    return coverage.PlanInputs(
        claims.rejected(upstream.gate),
        coverage.git_authors(upstream.settings().dbt_source_dir),
        warehouse.get(),
        coverage.detection_of(upstream.settings()),
    )


@dg.asset(
    kinds={"datahub", "python"},
    group_name=GROUP,
    pool=WAREHOUSE_POOL,  # a proposed assertion is tried on the warehouse: wait for a build
    description=(
        "The batch of grounded proposals: each cites where its value came from and is "
        "priced by re-scoring a what-if copy of the graph (conformance delta, checks fixed "
        "and broken, blast radius). Proposals with no benefit are dropped; what nothing in "
        "the graph can fix stays a violation with its reason."
    ),
)
def proposals(
    estate_spec: EstateSpec,
    metadata_context: MetadataContext,
    upstream: UpstreamResource,
    warehouse: WarehouseResource,
) -> dg.Output[Plan]:
    batch = coverage.replan(metadata_context, estate_spec, _context(upstream, warehouse))
    batch, narration = coverage.narrate(batch, estate_spec)
    issued = approval.issue(
        upstream.gate, estate_spec.policies, "batch", batch.digest, upstream.pin
    )
    narrated: dict[str, Any] = (
        {
            "narrator": "on",
            "model_calls": narration.model_calls,
            "narrator_fell_back": "; ".join(narration.fell_back) or "never",
        }
        if narration.on
        else {"narrator": "off: no ANTHROPIC_API_KEY, descriptions use the template"}
    )
    shown = plan_metadata(batch, issued.nonce, issued.trust.describe(), estate_spec.policies)
    return dg.Output(batch, metadata={**shown, **narrated})


@dg.asset(
    kinds={"python"},
    group_name=GROUP,
    description=(
        "Everything waiting on a person, in one list: the current coverage batch (unless "
        "it was written) with how to approve it."
    ),
)
def approval_queue(
    context: dg.AssetExecutionContext, proposals: Plan, upstream: UpstreamResource
) -> dg.Output[list[str]]:
    waiting: list[str] = []
    if proposals.proposals and not claims.claimed_by(upstream.gate, proposals.digest):
        waiting.append(
            f"coverage batch {proposals.digest}: {len(proposals.proposals)} "
            f"proposals, {proposals.base.overall.percent:.1f}% -> "
            f"{proposals.projected.overall.percent:.1f}% projected"
        )
    waiting += journal.waiting_incidents(context.instance, upstream.gate)
    text = "\n".join(f"- {w}" for w in waiting) or "Nothing is waiting on a person."
    return dg.Output(
        waiting, metadata={"waiting": len(waiting), "queue": dg.MetadataValue.md(text)}
    )


@dg.asset_check(
    asset=proposals,
    blocking=True,
    pool=WAREHOUSE_POOL,
    description=(
        "Blocks the write-back unless every proposal is priced and the batch is still current: "
        "DataHub is read again and planned again; any change to the graph changes the digest."
    ),
)
def batch_is_priced_and_current(
    proposals: Plan,
    upstream: UpstreamResource,
    datahub: DataHubResource,
    warehouse: WarehouseResource,
) -> dg.AssetCheckResult:
    unpriced = [p.id for p in proposals.proposals if p.price is None]
    written_by = claims.claimed_by(upstream.gate, proposals.digest)
    if written_by:
        return dg.AssetCheckResult(
            passed=False,
            metadata={"batch_digest": proposals.digest, "written_by_run": written_by},
            description=f"batch {proposals.digest} was already written by run {written_by}",
        )
    with datahub.graph() as graph:
        _, now = coverage.current_plan(
            graph, upstream.spec(), proposals.base.as_of_ms, _context(upstream, warehouse)
        )
    current = now.digest == proposals.digest
    return dg.AssetCheckResult(
        passed=not unpriced and current,
        metadata={
            "batch_digest": proposals.digest,
            "current_digest": now.digest,
            "unpriced": ", ".join(unpriced) or "none",
        },
        description=None if current else "the graph changed since the batch was planned",
    )


@dg.asset(
    kinds={"datahub"},
    group_name=GROUP,
    deps=[proposals],
    pool=WRITEBACK_POOL,
    description=(
        "Writes the approved proposals into DataHub, one writer per change, recording every "
        "aspect's pre-image for undo and a receipt per write. Launch it by hand with the batch "
        "digest, the approved ids and your name. Under a dry-run policy it writes nothing."
    ),
)
def coverage_writeback(
    context: dg.AssetExecutionContext,
    config: WritebackConfig,
    proposals: Plan,
    datahub: DataHubResource,
    upstream: UpstreamResource,
    warehouse: WarehouseResource,
    reviewer_token: dg.ResourceParam[ReviewerToken],
) -> dg.MaterializeResult[Any]:
    spec = upstream.spec()
    policy, store = spec.policies, upstream.gate
    automatic = context.run.tags.get(AUTOMATIC_TAG) == "true"
    try:
        chosen = coverage.select(proposals, config.approve, config.reject)
    except UpstreamError as exc:
        raise dg.Failure(f"{exc.problem}; {exc.fix}") from None
    request = reviewer.request(
        policy, config.batch_digest, config.reviewer, automatic, config.proof, config.nonce,
        reviewer_token.value, lambda token: whoami(datahub.target(), token), context.run.tags,
    )  # fmt: skip
    shown = coverage.subject(proposals, proposals.digest, chosen)
    shown = approval.grounds(store, policy, shown, config.nonce, upstream.pin)
    early = gate.decide(policy, request, shown)
    if early.verdict != "write":  # refused before waiting on anyone: an answer, not a failure
        return _unwritten(context, policy.actuation, proposals.digest, early)
    # the lock held, DataHub read again: the gate decides on what is there now
    lock = writeback_lock(upstream, context, f"coverage batch {proposals.digest}")
    with lock as held, datahub.graph() as graph:
        inputs = _context(upstream, warehouse)
        ctx, now = coverage.current_plan(graph, spec, proposals.base.as_of_ms, inputs)
        subject = coverage.subject(proposals, now.digest, chosen)
        subject = approval.grounds(store, policy, subject, config.nonce, upstream.pin)
        decision = gate.decide(policy, request, subject)
        if decision.verdict != "write":
            return _unwritten(context, policy.actuation, proposals.digest, decision)
        if config.reject:
            reason = config.reject_reason or "no reason given"
            claims.reject(store, config.reject, proposals.digest, config.reviewer, reason)
        chosen = tuple(p for p in chosen if p.id in decision.allowed)
        projected = coverage.projected_percent(spec, ctx, proposals, chosen)
        tag_run(context, {GATE: "write", REVIEWER: config.reviewer, BATCH: proposals.digest})
        done = coverage.write_claimed(
            graph, store, held, upstream.state, proposals.digest, config.nonce,
            context.run_id, config.reviewer, chosen, inputs.warehouse,
        )  # fmt: skip
    entry = {
        "batch_digest": proposals.digest,
        "reviewer": config.reviewer,
        "automatic": automatic,
        "approved": [p.id for p in chosen],
        "as_of_ms": proposals.base.as_of_ms,
        "percent_before": proposals.base.overall.percent,
        "projected_percent": projected,
        "written": bool(done.pre_images) and not done.failed,
        "pre_images": [p.as_json() for p in done.pre_images],
    }
    return dg.MaterializeResult(
        metadata={
            "policy": policy.actuation,
            "policy_digest": gate.policy_digest(policy),
            "reviewer": config.reviewer,
            "identity": policy.identity,
            "automatic": automatic,
            "batch_digest": proposals.digest,
            "written": done.written,
            "failed": len(done.failed),
            "partial": bool(done.failed),
            "held_for_a_person": len(decision.held),
            "projected_percent": dg.MetadataValue.float(projected),
            "receipts": dg.MetadataValue.md(receipts_table(done.receipts)),
            "journal": dg.MetadataValue.json(entry),
        }
    )


def _unwritten(
    context: dg.AssetExecutionContext, actuation: str, digest: str, decision: gate.Decision
) -> dg.MaterializeResult[Any]:
    """A dry-run or a refusal: an answer on the asset, nothing written, one line in the log."""
    refused: dict[str, Any] = (
        {"refused": True, "fix": decision.fix} if decision.verdict == "refuse" else {}
    )
    if refused:
        context.log.error(f"refused: {decision.problem}; fix: {decision.fix}")
    tag_run(context, {GATE: "refused" if refused else decision.verdict, BATCH: digest})
    return dg.MaterializeResult(
        metadata={
            "policy": actuation,
            "written": 0,
            "batch_digest": digest,
            "result": f"refused: {decision.problem}" if refused else decision.problem,
            **refused,
        }
    )


writeback_job = dg.define_asset_job(
    "coverage_writeback_job",
    selection=dg.AssetSelection.checks(batch_is_priced_and_current)
    | dg.AssetSelection.assets(coverage_writeback),
    tags=WRITEBACK_TAGS,
    description="Write an approved batch into DataHub. Launch it from the launchpad with "
    "the batch digest, the approved ids and your name (or `upstream approve`).",
)


@dg.sensor(
    job=writeback_job,
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description=(
        "Under an `auto` policy, launches the write-back for each new batch, tagged as "
        "automatic; proposals riskier than max_auto_risk still wait for a person. "
        "Under dry-run or ratify it launches nothing."
    ),
)
def auto_writeback(
    context: dg.SensorEvaluationContext, upstream: UpstreamResource
) -> dg.SensorResult | dg.SkipReason:
    spec = upstream.spec()
    if spec.policies.actuation != "auto":
        return dg.SkipReason(f"policy is {spec.policies.actuation}: a person approves")
    meta = journal.latest(context.instance, journal.PROPOSALS)
    if "batch_digest" not in meta or not meta["proposals"]:
        return dg.SkipReason("no batch with proposals has been planned")
    digest = str(meta["batch_digest"])
    if claims.claimed_by(upstream.gate, digest):
        return dg.SkipReason(f"batch {digest} was already written")
    held = approvals.outstanding(upstream.gate, "batch", digest)
    if held is None:
        return dg.SkipReason(f"batch {digest} has no approval waiting (plan again)")
    config = {
        "batch_digest": digest,
        "approve": ["all"],
        "reviewer": AUTO_REVIEWER,
        "nonce": held.nonce,
    }
    return dg.SensorResult(
        run_requests=[
            dg.RunRequest(
                run_key=f"auto-{digest}-{held.nonce}",
                tags={AUTOMATIC_TAG: "true", **by_sensor("auto_writeback", f"batch {digest}")},
                run_config={"ops": {"coverage_writeback": {"config": config}}},
            )
        ]
    )


ASSETS = [proposals, approval_queue, coverage_writeback]
CHECKS = [batch_is_priced_and_current]
defs = dg.Definitions(
    assets=ASSETS, asset_checks=CHECKS, jobs=[writeback_job], sensors=[auto_writeback]
)
