"""What the assets show a person in the Dagster UI: the batch, receipts and a verdict as
materialization metadata."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dagster as dg

from upstream_dagster.conformance.plan import Plan
from upstream_dagster.datahub.model import Receipt
from upstream_dagster.reliability.verdict import Verdict, pull_request_text, rca_markdown
from upstream_dagster.spec.urns import relation_of, short


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
        value = batch.shown(p)
        rows.append(
            f"| {p.id} | {batch.display(p.asset)} | {p.requirement} | {p.change.kind}: "
            f"{_cell(value, 240)} | {_cell('; '.join(p.evidence), 600)} | {p.risk:.3f} | "
            f"{price} |"
        )
    return "\n".join(rows)


def _table(columns: Sequence[tuple[str, str, str]], rows: list[dict[str, Any]]) -> Any:
    """A Dagster table: typed columns the UI sorts and shows in full."""
    schema = dg.TableSchema(
        columns=[dg.TableColumn(name, kind, description=about) for name, kind, about in columns]
    )
    return dg.MetadataValue.table(records=[dg.TableRecord(r) for r in rows], schema=schema)


PROPOSAL_COLUMNS = (
    ("id", "string", "Approve or reject by this id"),
    ("asset", "string", "As DataHub shows it, with its platform"),
    (
        "requirement",
        "string",
        "The estate.yaml requirement it closes (column_descriptions: documentation carried "
        "along lineage, which no requirement scores)",
    ),
    ("change", "string", "What would be written"),
    ("value", "string", "The proposed value, by display name"),
    ("evidence", "string", "Where the value came from in the graph"),
    ("points", "float", "Conformance points gained, re-scored on a what-if copy"),
    ("price", "string", "The points explained: checks fixed and broken, blast radius"),
    ("risk", "float", "The violation's risk (see the violations asset)"),
)


def proposals_records(batch: Plan) -> Any:
    """The batch as a sortable table, the biggest gain first."""
    checks = batch.base.overall.checks or 1
    rows = []
    for p in sorted(
        batch.proposals, key=lambda p: (-(p.price.delta_points if p.price else 0), p.id)
    ):
        price = (
            f"+{p.price.delta_points:.2f} pts: fixes {p.price.checks_fixed} of {checks} checks, "
            f"breaks {p.price.checks_broken}; {p.price.downstream} assets downstream, "
            f"{p.price.downstream_top_tier} in the most critical tier"
            if p.price
            else "not priced"
        )
        rows.append(
            {
                "id": p.id,
                "asset": batch.display(p.asset),
                "requirement": p.requirement,
                "change": p.change.kind,
                "value": batch.shown(p),
                "evidence": "; ".join(p.evidence),
                "points": round(p.price.delta_points, 3) if p.price else 0.0,
                "price": price,
                "risk": round(p.risk, 3),
            }
        )
    return _table(PROPOSAL_COLUMNS, rows)


VIOLATION_COLUMNS = (
    ("rank", "int", "By risk, highest first"),
    ("risk", "float", "The weighted sum the arithmetic column shows"),
    ("asset", "string", "The asset"),
    ("tier", "string", "Its tier in estate.yaml"),
    ("requirement", "string", "What it does not meet"),
    ("why", "string", "What DataHub shows"),
    ("arithmetic", "string", "Each risk term, its weight and its reason"),
)


def violations_records(ranked: Sequence[Any], label: Any) -> Any:
    rows = [
        {
            "rank": i,
            "risk": round(v.risk.score, 3),
            "asset": label(v.check.asset),
            "tier": v.check.tier,
            "requirement": v.check.requirement,
            "why": v.check.reason,
            "arithmetic": v.risk.explain(),
        }
        for i, v in enumerate(ranked[:500], 1)
    ]
    return _table(VIOLATION_COLUMNS, rows)


def _cell(text: str, most: int) -> str:
    """Text fit for a markdown table cell: one line, no pipes, at most ``most`` characters."""
    flat = " ".join(text.replace("|", "/").split())
    return flat if len(flat) <= most else flat[: most - 3] + "..."


REMAINING_COLUMNS = (
    ("asset", "string", "As DataHub shows it, with its platform"),
    ("tier", "string", "Its tier in estate.yaml"),
    ("requirement", "string", "What it still does not meet"),
    ("why", "string", "Why nothing is proposed: the rule that decided and what it found"),
    ("looked", "string", "Every rule consulted and what each found"),
)


def remaining(result: Plan) -> tuple[str, Any]:
    """The violations no proposal closes, each with its own reason: markdown and a table."""
    lines = ["| asset | tier | requirement | why it stays a violation | what each rule found |"]
    lines.append("|---|---|---|---|---|")
    rows = []
    for u in result.unfixable:
        label = result.display(u.asset)
        looked = "; ".join(u.looked)
        lines.append(
            f"| {label} | {u.tier} | {u.requirement} | {_cell(u.reason, 300)} | "
            f"{_cell(looked, 600)} |"
        )
        rows.append(
            {"asset": label, "tier": u.tier, "requirement": u.requirement, "why": u.reason,
             "looked": looked}
        )  # fmt: skip
    return "\n".join(lines), _table(REMAINING_COLUMNS, rows)


def plan_metadata(result: Plan, nonce: str = "", policy: str = "") -> dict[str, Any]:
    stays, stays_table = remaining(result)
    before, after = result.base.overall.percent, result.projected.overall.percent
    was, will = result.base.descriptions, result.projected.descriptions
    return {
        "batch_digest": result.digest,
        "approval_nonce": nonce,
        "policy": policy,
        "proposals": len(result.proposals),
        "percent_before": dg.MetadataValue.float(before),
        "percent_projected": dg.MetadataValue.float(after),
        "projected_delta_points": dg.MetadataValue.float(round(after - before, 2)),
        "dropped_no_benefit": result.dropped,
        "deferred_to_next_batch": result.deferred,
        "unfixable": len(result.unfixable),
        "batch_table": proposals_records(result),
        "batch": dg.MetadataValue.md(
            proposals_table(result)
            if result.proposals
            else "No proposals: nothing in the graph can close the "
            "remaining violations (see `stays_a_violation`)."
        ),
        "stays_a_violation": dg.MetadataValue.md(stays),
        "stays_a_violation_table": stays_table,
        "descriptions_before": f"{was.documented} documented, {was.generated} generated, "
        f"{was.missing} missing",
        "descriptions_projected": f"{will.documented} documented, {will.generated} generated, "
        f"{will.missing} missing",
        "approve_with": dg.MetadataValue.md(
            f"`upstream approve --all --digest {result.digest} --reviewer NAME` or launch the "
            "`coverage_writeback_job` job "
            f"with config `batch_digest: {result.digest}`, `nonce: {nonce}`, `approve: [all]`, "
            "`reviewer: NAME` (and `proof:` from `upstream sign` when approvals are signed)"
        ),
    }


def receipts_table(receipts: Sequence[tuple[str, Receipt]]) -> str:
    rows = ["| proposal | urn | aspect | written | detail |", "|---|---|---|---|---|"]
    rows += [
        f"| {pid} | {short(r.urn)} | {r.aspect} | {'yes' if r.written else 'NO'} | {r.detail} |"
        for pid, r in receipts
    ]
    return "\n".join(rows)


EVIDENCE_COLUMNS = (
    ("id", "string", "How the RCA cites it: [E3]"),
    ("kind", "string", "assertion, timeline, profile, run record, lineage, forensic, memory"),
    ("dataset", "string", "The dataset it is about"),
    ("column", "string", "The column, when it is about one"),
    ("claim", "string", "What it says, in full"),
    ("cited", "bool", "Whether the top hypothesis rests on it"),
)


def evidence_records(v: Verdict) -> Any:
    """The evidence ledger as a sortable table: every item, cited by the conclusion or not."""
    cited = set(v.top[0].cites) if v.top else set()
    rows = [
        {
            "id": f"E{e.index}",
            "kind": e.kind.replace("_", " "),
            "dataset": relation_of(e.subject)
            if e.subject.startswith("urn:li:dataset:")
            else e.subject,
            "column": e.column or "",
            "claim": e.claim,
            "cited": e.index in cited,
        }
        for e in v.ledger
    ]
    return _table(EVIDENCE_COLUMNS, rows)


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
        "evidence": evidence_records(v),
        "pull_request": dg.MetadataValue.md(pull_request_text(v) or "no patch to propose"),
        "narrator": (
            "wrote the RCA summary from the cited evidence"
            if v.summary
            else "off: the RCA summary is the template (no ANTHROPIC_API_KEY, or see notes)"
        ),
        "owners_notified": ", ".join(v.owners) or "no owner in DataHub",
        "blast_radius": ", ".join(v.consumers) or "no dashboard or chart downstream",
    }
