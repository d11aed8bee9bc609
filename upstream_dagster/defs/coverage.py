"""The coverage controller in Dagster: plan -> ratify -> actuate -> verify, and reset to undo.

`proposals` and `approval_queue` are planned in the score job. The write-back runs in a job of
its own that holds the blocking check `batch_is_priced_and_current` and `coverage_writeback`,
which never auto-materializes: a reviewer launches it with a typed config. What may be written
is decided by `upstream_dagster.gate.decide`, with the policy from estate.yaml.
"""

import json
from typing import Any

import dagster as dg
from pydantic import Field

from upstream_dagster import gate
from upstream_dagster.conformance.context import MetadataContext
from upstream_dagster.conformance.plan import Plan
from upstream_dagster.defs import journal
from upstream_dagster.defs.presentation import plan_metadata, receipts_table
from upstream_dagster.defs.resources import (
    AUTOMATIC_TAG,
    WRITEBACK_POOL,
    WRITEBACK_TAGS,
    DataHubResource,
    UpstreamResource,
    WarehouseResource,
)
from upstream_dagster.errors import UpstreamError
from upstream_dagster.services import coverage, reviewer
from upstream_dagster.spec import EstateSpec
from upstream_dagster.spec.urns import short
from upstream_dagster.state import claims

GROUP = "coverage"
AUTO_REVIEWER = "upstream-auto"


class WritebackConfig(dg.Config):
    batch_digest: str = Field(description="The digest shown on the proposals asset.")
    approve: list[str] = Field(description="Proposal ids to write, or [all].")
    reviewer: str = Field(description="Who approves; must be listed in policies.approvers.")
    reject: list[str] = Field(default_factory=list, description="Proposal ids to reject.")
    reject_reason: str = Field(default="", description="Why, recorded with the rejection.")
    proof: str = Field(
        default="",
        description="Your signature over this approval (`upstream sign`), when estate.yaml "
        "requires signed approvals: proof of who you are, not a secret.",
    )


class ResetConfig(dg.Config):
    batch_digest: str = Field(default="all", description="One batch's digest, or 'all'.")
    confirm: bool = Field(description="Must be true: reset rewrites DataHub.")


def _context(upstream: UpstreamResource, warehouse: WarehouseResource) -> coverage.PlanInputs:
    """What planning reads besides DataHub: rejected ids, the dbt model files' authors, and
    the warehouse a proposed assertion would run in."""
    return coverage.PlanInputs(
        claims.rejected(upstream.state),
        coverage.git_authors(upstream.settings().dbt_source_dir),
        warehouse.get(),
    )


@dg.asset(
    kinds={"datahub", "python"},
    group_name=GROUP,
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
    narrated: dict[str, Any] = (
        {
            "narrator": "on",
            "model_calls": narration.model_calls,
            "narrator_fell_back": "; ".join(narration.fell_back) or "never",
        }
        if narration.on
        else {"narrator": "off: no ANTHROPIC_API_KEY, descriptions use the template"}
    )
    return dg.Output(batch, metadata={**plan_metadata(batch), **narrated})


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
    if proposals.proposals and not claims.claimed_by(upstream.state, proposals.digest):
        waiting.append(
            f"coverage batch {proposals.digest}: {len(proposals.proposals)} "
            f"proposals, {proposals.base.overall.percent:.1f}% -> "
            f"{proposals.projected.overall.percent:.1f}% projected"
        )
    waiting += journal.waiting_incidents(context.instance, upstream.state)
    text = "\n".join(f"- {w}" for w in waiting) or "Nothing is waiting on a person."
    return dg.Output(
        waiting, metadata={"waiting": len(waiting), "queue": dg.MetadataValue.md(text)}
    )


@dg.asset_check(
    asset=proposals,
    blocking=True,
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
    written_by = claims.claimed_by(upstream.state, proposals.digest)
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
) -> dg.MaterializeResult[Any]:
    spec = upstream.spec()
    policy = spec.policies
    automatic = context.run.tags.get(AUTOMATIC_TAG) == "true"
    try:
        chosen = coverage.select(proposals, config.approve, config.reject)
    except UpstreamError as exc:
        raise dg.Failure(f"{exc.problem}; {exc.fix}") from None
    with datahub.graph() as graph:
        inputs = _context(upstream, warehouse)
        ctx, now = coverage.current_plan(graph, spec, proposals.base.as_of_ms, inputs)
        request = reviewer.request(
            policy, config.batch_digest, config.reviewer, automatic, config.proof
        )
        decision = gate.decide(policy, request, coverage.subject(proposals, now.digest, chosen))
        if decision.verdict != "write":  # dry-run, or refused: an answer, not a failed run
            refused: dict[str, Any] = (
                {"refused": True, "fix": decision.fix} if decision.verdict == "refuse" else {}
            )
            if refused:
                context.log.error(f"refused: {decision.problem}; fix: {decision.fix}")
            return dg.MaterializeResult(
                metadata={
                    "policy": policy.actuation,
                    "written": 0,
                    "batch_digest": proposals.digest,
                    "result": f"refused: {decision.problem}" if refused else decision.problem,
                    **refused,
                }
            )
        if config.reject:
            claims.reject(
                upstream.state,
                config.reject,
                proposals.digest,
                config.reviewer,
                config.reject_reason or "no reason given",
            )
        chosen = tuple(p for p in chosen if p.id in decision.allowed)
        projected = coverage.projected_percent(spec, ctx, proposals, chosen)
        done = coverage.write_claimed(
            graph, upstream.state, proposals.digest, context.run_id, config.reviewer, chosen,
            inputs.warehouse,
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
            "reviewer": config.reviewer,
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


@dg.asset(
    kinds={"datahub"},
    group_name=GROUP,
    deps=[coverage_writeback],
    description=(
        "Reads DataHub afresh and re-scores at the batch's instant; its check fails if the "
        "measured conformance differs from the projected one by any amount."
    ),
)
def coverage_verify(
    context: dg.AssetExecutionContext, datahub: DataHubResource, upstream: UpstreamResource
) -> dg.MaterializeResult[Any]:
    written = journal.written(context.instance)
    if not written:
        raise dg.Failure("no write-back has been made yet: approve a batch first")
    last = written[0]
    with datahub.graph() as graph:
        measured = coverage.measured_percent(graph, upstream.spec(), last.as_of_ms)
    return dg.MaterializeResult(
        metadata={
            "batch_digest": last.digest,
            "measured_percent": dg.MetadataValue.float(measured),
            "projected_percent": dg.MetadataValue.float(last.projected_percent),
            "percent_before": dg.MetadataValue.float(last.percent_before),
        }
    )


@dg.asset_check(
    asset=coverage_verify,
    description="Measured conformance after the write-back equals the projection shown for "
    "approval.",
)
def measured_equals_projected(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
    meta = journal.latest(context.instance, dg.AssetKey("coverage_verify"))
    measured, projected = float(meta["measured_percent"]), float(meta["projected_percent"])
    return dg.AssetCheckResult(
        passed=measured == projected,
        metadata={
            "measured": measured,
            "projected": projected,
            "difference": round(measured - projected, 4),
        },
    )


@dg.asset(
    kinds={"datahub"},
    group_name=GROUP,
    description=(
        "Undo: restores every aspect a write-back wrote (one batch, or all; coverage batches "
        "and incident write-backs alike) to its pre-image; an aspect that did not exist before "
        "is removed again."
    ),
)
def coverage_reset(
    context: dg.AssetExecutionContext,
    config: ResetConfig,
    datahub: DataHubResource,
    upstream: UpstreamResource,
) -> dg.MaterializeResult[Any]:
    if not config.confirm:
        raise dg.Failure("reset rewrites DataHub: launch it with confirm: true")
    batches = journal.to_undo(context.instance, upstream.state, config.batch_digest)
    finished = journal.finished_runs(context.instance)
    for run_id, digest, _ in batches:
        if run_id not in finished:
            context.log.warning(f"run {run_id} died writing batch {digest}: undoing its writes")
    with datahub.graph() as graph:
        restored = coverage.restore_all(graph, [(digest, pres) for _, digest, pres in batches])
    claims.undone(upstream.state, {run_id for run_id, _, _ in batches})
    for digest in {digest for _, digest, _ in batches}:  # undone: it may be approved again
        claims.release(upstream.state, digest, f"undone by reset run {context.run_id}")
    rows = [
        f"| {r.batch} | {short(r.receipt.urn)} | {r.receipt.aspect} | {r.receipt.detail} |"
        for r in restored
    ]
    return dg.MaterializeResult(
        metadata={
            "batches": json.dumps(sorted({digest for _, digest, _ in batches})),
            "aspects_restored": len(restored),
            "restored": dg.MetadataValue.md(
                "| batch | urn | aspect | result |\n|---|---|---|---|\n" + "\n".join(rows)
            ),
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
verify_job = dg.define_asset_job(
    "coverage_verify_job",
    selection=dg.AssetSelection.assets(coverage_verify),
    description="Re-read DataHub and check the measured conformance equals the projection.",
)
reset_job = dg.define_asset_job(
    "coverage_reset_job",
    selection=dg.AssetSelection.assets(coverage_reset),
    description="Undo: restore every aspect the write-backs wrote to its pre-image.",
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
    if claims.claimed_by(upstream.state, digest):
        return dg.SkipReason(f"batch {digest} was already written")
    config = {"batch_digest": digest, "approve": ["all"], "reviewer": AUTO_REVIEWER}
    return dg.SensorResult(
        run_requests=[
            dg.RunRequest(
                run_key=f"auto-{digest}",
                tags={AUTOMATIC_TAG: "true"},
                run_config={"ops": {"coverage_writeback": {"config": config}}},
            )
        ]
    )


ASSETS = [proposals, approval_queue, coverage_writeback, coverage_verify, coverage_reset]
CHECKS = [batch_is_priced_and_current, measured_equals_projected]
defs = dg.Definitions(
    assets=ASSETS,
    asset_checks=CHECKS,
    jobs=[writeback_job, verify_job, reset_job],
    sensors=[auto_writeback],
)
