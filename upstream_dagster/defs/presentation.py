"""What the assets show a person in the Dagster UI: the batch, receipts and a verdict as
materialization metadata."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dagster as dg

from upstream_dagster.conformance.plan import Plan
from upstream_dagster.datahub.model import Receipt
from upstream_dagster.reliability.verdict import Verdict, pull_request_text, rca_markdown
from upstream_dagster.spec.urns import short


def proposals_table(batch: Plan) -> str:
    """The batch as a reviewer reads it, owners, terms and domains by their display names."""
    rows = [
        "| id | asset | requirement | proposed value | evidence | risk | price |",
        "|---|---|---|---|---|---:|---|",
    ]
    for p in batch.proposals:
        price = (
            f"+{p.price.delta_points:.2f} pts, fixes {p.price.checks_fixed}, breaks "
            f"{p.price.checks_broken}, {p.price.downstream} downstream "
            f"({p.price.downstream_top_tier} in the most critical tier)"
            if p.price
            else "not priced"
        )
        values = p.effective_change().values
        value = ", ".join(batch.display(v) for v in values)
        rows.append(
            f"| {p.id} | {batch.display(p.asset)} | {p.requirement} | {p.change.kind}: "
            f"{value[:90]} | {'; '.join(p.evidence)} | {p.risk:.3f} | {price} |"
        )
    return "\n".join(rows)


def plan_metadata(result: Plan) -> dict[str, Any]:
    unfixable = ["| asset | tier | requirement | why it stays a violation |", "|---|---|---|---|"]
    unfixable += [
        f"| {short(u.asset)} | {u.tier} | {u.requirement} | {u.reason} |" for u in result.unfixable
    ]
    before, after = result.base.overall.percent, result.projected.overall.percent
    return {
        "batch_digest": result.digest,
        "proposals": len(result.proposals),
        "percent_before": dg.MetadataValue.float(before),
        "percent_projected": dg.MetadataValue.float(after),
        "projected_delta_points": dg.MetadataValue.float(round(after - before, 2)),
        "dropped_no_benefit": result.dropped,
        "deferred_to_next_batch": result.deferred,
        "unfixable": len(result.unfixable),
        "batch": dg.MetadataValue.md(
            proposals_table(result)
            if result.proposals
            else "No proposals: nothing in the graph can close the "
            "remaining violations (see `stays_a_violation`)."
        ),
        "stays_a_violation": dg.MetadataValue.md("\n".join(unfixable)),
        "approve_with": dg.MetadataValue.md(
            f"`upstream approve --all --digest {result.digest} --reviewer NAME` or launch the "
            "`coverage_writeback_job` job "
            f"with config `batch_digest: {result.digest}`, `approve: [all]`, `reviewer: NAME`"
        ),
    }


def receipts_table(receipts: Sequence[tuple[str, Receipt]]) -> str:
    rows = ["| proposal | urn | aspect | written | detail |", "|---|---|---|---|---|"]
    rows += [
        f"| {pid} | {short(r.urn)} | {r.aspect} | {'yes' if r.written else 'NO'} | {r.detail} |"
        for pid, r in receipts
    ]
    return "\n".join(rows)


def verdict_metadata(v: Verdict) -> dict[str, Any]:
    top = v.top
    return {
        "conclusion": v.headline(),
        "confidence": dg.MetadataValue.float(v.confidence),
        "concluded": v.concluded,
        "root_cause": v.cause or "none (abstained)",
        "column": v.column or ("none: the cause is a whole dataset" if v.cause else "none"),
        "failure_class": v.failure_class or "none (abstained)",
        "remedy": v.remedy.action,
        "verdict_digest": v.digest,
        "risk": dg.MetadataValue.float(v.risk.score),
        "datahub_reads": v.reads,
        "memory_used": v.memory_used,
        "hypotheses": len(v.ranked),
        "confidence_arithmetic": top[1].explain() if top else "no hypothesis cites evidence",
        "rca": dg.MetadataValue.md(rca_markdown(v)),
        "pull_request": dg.MetadataValue.md(pull_request_text(v) or "no patch to propose"),
        "narrator": (
            "wrote the RCA summary from the cited evidence"
            if v.summary
            else "off: the RCA summary is the template (no ANTHROPIC_API_KEY, or see notes)"
        ),
        "owners_notified": ", ".join(v.owners) or "no owner in DataHub",
        "blast_radius": ", ".join(v.consumers) or "no dashboard or chart downstream",
    }
