"""Verify and undo, for every write-back: `coverage_verify` re-reads DataHub and checks the
measured conformance equals the projection approved; `coverage_reset` restores every aspect the
write-backs wrote (coverage batches and incident write-backs alike, finished or killed
part-way) to its pre-image, under the write-back lock, and gives each batch back: its claim
released and a fresh one-time value issued, so it may be approved again, and an approval of it
from before cannot be replayed.
"""

import json
from typing import Any

import dagster as dg
from pydantic import Field

from upstream_dagster.defs import journal
from upstream_dagster.defs.coverage import GROUP, coverage_writeback
from upstream_dagster.defs.resources import DataHubResource, UpstreamResource, writeback_lock
from upstream_dagster.services import coverage
from upstream_dagster.spec.urns import short
from upstream_dagster.state import claims


class ResetConfig(dg.Config):
    batch_digest: str = Field(default="all", description="One batch's digest, or 'all'.")
    confirm: bool = Field(description="Must be true: reset rewrites DataHub.")


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
        found = coverage.detection_of(upstream.settings())
        measured = coverage.measured_percent(graph, upstream.spec(), last.as_of_ms, found)
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
    store = upstream.gate
    with writeback_lock(upstream, context, "reset"):
        batches, note = journal.to_undo(
            context.instance, store, upstream.state, config.batch_digest
        )
        if note:
            context.log.warning(note)
        finished = journal.finished_runs(context.instance)
        for run_id, digest, _ in batches:
            if run_id not in finished:
                context.log.warning(f"run {run_id} died writing batch {digest}: undoing its writes")
        with datahub.graph() as graph:
            restored = coverage.restore_all(graph, [(digest, pres) for _, digest, pres in batches])
        claims.undone(store, upstream.state, {run_id for run_id, _, _ in batches})
        for digest in {digest for _, digest, _ in batches}:  # undone: it may be approved again
            kind, subject = (
                ("fix", digest.removeprefix("incident-"))
                if digest.startswith("incident-")
                else ("batch", digest)
            )
            coverage.give_back(store, kind, subject, digest, f"undone by reset {context.run_id}")
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

defs = dg.Definitions(
    assets=[coverage_verify, coverage_reset],
    asset_checks=[measured_equals_projected],
    jobs=[verify_job, reset_job],
)
