"""The coverage controller in Dagster: plan -> ratify -> actuate -> verify, and reset to undo.

`proposals` and `approval_queue` are planned in the score job. The write-back runs in a job of
its own that holds the blocking check `batch_is_priced_and_current` and `coverage_writeback`,
which never auto-materializes: a reviewer launches it with a typed config. The policy comes from
estate.yaml, never from the request, and the asset re-checks digest, reviewer and policy itself.
"""

import json
from typing import Any

import dagster as dg
from pydantic import Field

from upstream_dagster import gate
from upstream_dagster.conformance.context import MetadataContext
from upstream_dagster.conformance.plan import Plan, plan
from upstream_dagster.defs import coverage_ops as ops
from upstream_dagster.defs.resources import DataHubResource
from upstream_dagster.runtime import WRITEBACK_POOL
from upstream_dagster.settings import Settings
from upstream_dagster.spec import EstateSpec
from upstream_dagster.spec.urns import short

GROUP = "coverage"


class WritebackConfig(dg.Config):
    batch_digest: str = Field(description="The digest shown on the proposals asset.")
    approve: list[str] = Field(description="Proposal ids to write, or [all].")
    reviewer: str = Field(description="Who approves; must be listed in policies.approvers.")
    reject: list[str] = Field(default_factory=list, description="Proposal ids to reject.")
    reject_reason: str = Field(default="", description="Why, recorded with the rejection.")


class ResetConfig(dg.Config):
    batch_digest: str = Field(default="all", description="One batch's digest, or 'all'.")
    confirm: bool = Field(description="Must be true: reset rewrites DataHub.")


def coverage_defs(
    settings: Settings,
) -> tuple[list[dg.AssetsDefinition], list[dg.AssetChecksDefinition]]:
    @dg.asset(
        group_name=GROUP,
        description=(
            "The batch of grounded proposals: each cites where its value came from and is "
            "priced by re-scoring a what-if copy of the graph (conformance delta, checks fixed "
            "and broken, blast radius). Proposals with no benefit are dropped; what nothing in "
            "the graph can fix stays a violation with its reason."
        ),
    )
    def proposals(
        context: dg.AssetExecutionContext,
        estate_spec: EstateSpec,
        metadata_context: MetadataContext,
    ) -> dg.Output[Plan]:
        result = plan(
            metadata_context,
            estate_spec,
            metadata_context.as_of_ms,
            gate.rejected(settings.state_dir),
            ops.git_authors(settings),
        )
        result, narration = ops.narrate(result, estate_spec)
        return dg.Output(result, metadata={**ops.plan_metadata(result), **narration})

    @dg.asset(
        group_name=GROUP,
        description=(
            "Everything waiting on a person, in one list: the current coverage batch (unless "
            "it was written) with how to approve it."
        ),
    )
    def approval_queue(context: dg.AssetExecutionContext, proposals: Plan) -> dg.Output[list[str]]:
        waiting: list[str] = []
        written = gate.claimed_by(settings.state_dir, proposals.digest)
        if proposals.proposals and not written:
            waiting.append(
                f"coverage batch {proposals.digest}: {len(proposals.proposals)} "
                f"proposals, {proposals.base.overall.percent:.1f}% -> "
                f"{proposals.projected.overall.percent:.1f}% projected"
            )
        from upstream_dagster.defs.reliability import waiting_incidents

        waiting += waiting_incidents(context.instance, settings)
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
    def batch_is_priced_and_current(proposals: Plan) -> dg.AssetCheckResult:
        unpriced = [p.id for p in proposals.proposals if p.price is None]
        written_by = gate.claimed_by(settings.state_dir, proposals.digest)
        if written_by:
            return dg.AssetCheckResult(
                passed=False,
                metadata={"batch_digest": proposals.digest, "written_by_run": written_by},
                description=f"batch {proposals.digest} was already written by run {written_by}",
            )
        spec = ops.load_spec(settings)
        now = ops.current_plan(settings, spec, proposals.base.as_of_ms)
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
        group_name=GROUP,
        deps=[proposals],
        pool=WRITEBACK_POOL,
        description=(
            "Writes the approved proposals into DataHub, one writer per aspect, recording every "
            "aspect's pre-image for undo and a receipt per write. Launch it by hand with the batch "
            "digest, the approved ids and your name. Under a dry-run policy it writes nothing."
        ),
    )
    def coverage_writeback(
        context: dg.AssetExecutionContext,
        config: WritebackConfig,
        proposals: Plan,
        datahub: DataHubResource,
    ) -> dg.MaterializeResult:
        return _writeback(context, datahub.target(settings), config, proposals)

    @dg.asset(
        group_name=GROUP,
        deps=[coverage_writeback],
        description=(
            "Reads DataHub afresh and re-scores at the batch's instant; its check fails if the "
            "measured conformance differs from the projected one by any amount."
        ),
    )
    def coverage_verify(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        from upstream_dagster.conformance.score import score
        from upstream_dagster.datahub import open_graph
        from upstream_dagster.datahub.readpath import read_context
        from upstream_dagster.datahub.scope import resolve_scope

        entries = [e for e in ops.writebacks(context.instance) if e.get("written")]
        if not entries:
            raise dg.Failure("no write-back has been made yet: approve a batch first")
        last = entries[0]
        spec = ops.load_spec(settings)
        graph = open_graph(settings)
        try:
            ctx = read_context(graph, int(last["as_of_ms"]))
            dial = score(ctx, spec, resolve_scope(graph, spec, ctx), int(last["as_of_ms"]))
        finally:
            graph.close()
        return dg.MaterializeResult(
            metadata={
                "batch_digest": last["batch_digest"],
                "measured_percent": dg.MetadataValue.float(dial.overall.percent),
                "projected_percent": dg.MetadataValue.float(float(last["projected_percent"])),
                "percent_before": dg.MetadataValue.float(float(last["percent_before"])),
            }
        )

    @dg.asset_check(
        asset=coverage_verify,
        description=(
            "Measured conformance after the write-back equals the projection shown for approval."
        ),
    )
    def measured_equals_projected(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        event = context.instance.get_latest_materialization_event(dg.AssetKey("coverage_verify"))
        meta = event.asset_materialization.metadata if event and event.asset_materialization else {}
        measured = float(meta["measured_percent"].value)  # type: ignore[arg-type]
        projected = float(meta["projected_percent"].value)  # type: ignore[arg-type]
        return dg.AssetCheckResult(
            passed=measured == projected,
            metadata={
                "measured": measured,
                "projected": projected,
                "difference": round(measured - projected, 4),
            },
        )

    @dg.asset(
        group_name=GROUP,
        description=(
            "Undo: restores every aspect a write-back wrote (one batch, or all) to its pre-image; "
            "an aspect that did not exist before is removed again."
        ),
    )
    def coverage_reset(
        context: dg.AssetExecutionContext, config: ResetConfig, datahub: DataHubResource
    ) -> dg.MaterializeResult:
        return _reset(context, datahub.target(settings), config)

    return (
        [proposals, approval_queue, coverage_writeback, coverage_verify, coverage_reset],
        [batch_is_priced_and_current, measured_equals_projected],
    )


def _writeback(
    context: dg.AssetExecutionContext, settings: Settings, config: WritebackConfig, batch: Plan
) -> dg.MaterializeResult:
    from upstream_dagster.datahub import open_graph
    from upstream_dagster.datahub.writers import write_change

    spec = ops.load_spec(settings)
    policy = spec.policies
    # The policy is read from estate.yaml, never from the request: a tag can say a launch is
    # automatic, but only an `auto` policy lets an automatic launch write anything.
    automatic = context.run.tags.get("upstream/automatic") == "true"
    if config.batch_digest != batch.digest:
        raise dg.Failure(
            f"stale batch digest {config.batch_digest}: the current batch is "
            f"{batch.digest}; approve the batch shown on the proposals asset"
        )
    ctx = ops.current_context(settings, batch.base.as_of_ms)
    current = ops.replan(settings, spec, ctx)
    if current.digest != batch.digest:
        raise dg.Failure(
            "the graph changed since this batch was planned (digest now "
            f"{current.digest}); run the score job and approve the new batch"
        )
    if policy.actuation == "dry-run":
        return dg.MaterializeResult(
            metadata={
                "policy": "dry-run",
                "written": 0,
                "batch_digest": batch.digest,
                "result": "dry-run policy in estate.yaml: nothing was written",
            }
        )
    if automatic and policy.actuation != "auto":
        raise dg.Failure(
            f"this launch says it is automatic, but estate.yaml's policy is "
            f"{policy.actuation!r}: only a person on the approvers list may write"
        )
    if not automatic and config.reviewer not in policy.approvers:
        raise dg.Failure(
            f"{config.reviewer!r} is not an approver; estate.yaml allows "
            f"{', '.join(policy.approvers) or 'nobody'}"
        )
    chosen = ops.select(batch, config.approve)
    if automatic:
        chosen = tuple(p for p in chosen if p.risk <= policy.max_auto_risk)
    if config.reject:
        gate.reject(
            settings.state_dir,
            config.reject,
            batch.digest,
            config.reviewer,
            config.reject_reason or "no reason given",
        )
        chosen = tuple(p for p in chosen if p.id not in config.reject)
    projected = ops.projected_percent(spec, ctx, batch, chosen)
    gate.claim(settings.state_dir, batch.digest, context.run_id, config.reviewer)
    graph = open_graph(settings)
    receipts, pre_images = [], []
    try:
        for p in chosen:
            for receipt, pre in write_change(graph, p.asset, p.effective_change()):
                receipts.append((p.id, receipt))
                if receipt.written:
                    pre_images.append(pre.as_json())
    finally:
        graph.close()
    failed = [(pid, r) for pid, r in receipts if not r.written]
    table = ["| proposal | urn | aspect | written | detail |", "|---|---|---|---|---|"]
    table += [
        f"| {pid} | {short(r.urn)} | {r.aspect} | {'yes' if r.written else 'NO'} | {r.detail} |"
        for pid, r in receipts
    ]
    journal = {
        "batch_digest": batch.digest,
        "reviewer": config.reviewer,
        "automatic": automatic,
        "approved": [p.id for p in chosen],
        "as_of_ms": batch.base.as_of_ms,
        "percent_before": batch.base.overall.percent,
        "projected_percent": projected,
        "written": bool(pre_images) and not failed,
        "pre_images": pre_images,
    }
    return dg.MaterializeResult(
        metadata={
            "policy": policy.actuation,
            "reviewer": config.reviewer,
            "automatic": automatic,
            "batch_digest": batch.digest,
            "written": len(receipts) - len(failed),
            "failed": len(failed),
            "partial": bool(failed),
            "projected_percent": dg.MetadataValue.float(projected),
            "receipts": dg.MetadataValue.md("\n".join(table)),
            "journal": dg.MetadataValue.json(journal),
        }
    )


def _reset(
    context: dg.AssetExecutionContext, settings: Settings, config: ResetConfig
) -> dg.MaterializeResult:
    from upstream_dagster.datahub import open_graph
    from upstream_dagster.datahub.writers import PreImage, restore

    if not config.confirm:
        raise dg.Failure("reset rewrites DataHub: launch it with confirm: true")
    done = ops.reset_batches(context.instance)  # a batch is written once, so undone once
    entries = [
        e
        for e in ops.writebacks(context.instance)
        if config.batch_digest in ("all", e["batch_digest"]) and e["batch_digest"] not in done
    ]
    graph = open_graph(settings)
    restored = []
    try:
        for entry in entries:  # newest batch first, each batch's writes in reverse order
            for raw in reversed(entry["pre_images"]):
                receipt = restore(graph, PreImage(raw["urn"], raw["aspect"], raw["value"]))
                restored.append(
                    f"| {entry['batch_digest']} | {short(receipt.urn)} | "
                    f"{receipt.aspect} | {receipt.detail} |"
                )
    finally:
        graph.close()
    return dg.MaterializeResult(
        metadata={
            "batches": json.dumps(sorted({e["batch_digest"] for e in entries})),
            "aspects_restored": len(restored),
            "restored": dg.MetadataValue.md(
                "| batch | urn | aspect | result |\n|---|---|---|---|\n" + "\n".join(restored)
            ),
        }
    )


AUTO_REVIEWER = "upstream-auto"


def auto_writeback_sensor(settings: Settings, job: Any) -> dg.SensorDefinition:
    @dg.sensor(
        job=job,
        minimum_interval_seconds=60,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=(
            "Under an `auto` policy, launches the write-back for each new batch, tagged as "
            "automatic; proposals riskier than max_auto_risk still wait for a person. "
            "Under dry-run or ratify it launches nothing."
        ),
    )
    def auto_writeback(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
        spec = ops.load_spec(settings)
        if spec.policies.actuation != "auto":
            return dg.SkipReason(f"policy is {spec.policies.actuation}: a person approves")
        event = context.instance.get_latest_materialization_event(dg.AssetKey("proposals"))
        meta = event.asset_materialization.metadata if event and event.asset_materialization else {}
        if "batch_digest" not in meta or not meta["proposals"].value:
            return dg.SkipReason("no batch with proposals has been planned")
        digest = str(meta["batch_digest"].value)
        if gate.claimed_by(settings.state_dir, digest):
            return dg.SkipReason(f"batch {digest} was already written")
        config = {"batch_digest": digest, "approve": ["all"], "reviewer": AUTO_REVIEWER}
        return dg.SensorResult(
            run_requests=[
                dg.RunRequest(
                    run_key=f"auto-{digest}",
                    tags={"upstream/automatic": "true"},
                    run_config={"ops": {"coverage_writeback": {"config": config}}},
                )
            ]
        )

    return auto_writeback
