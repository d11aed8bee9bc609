"""The proposals asset as a reviewer reads it in the Dagster UI, on one screen.

Dagster shows an asset's metadata as one column of values beside their names, as wide as the
widest value: one wide table pushes every value past the right edge. So what a reviewer reads
first is narrow and wraps: how to approve (links to a prefilled launchpad), the batch in a line,
the proposals by gain (asset, what is proposed, its evidence, its gain), and every violation
that stays with its reason. The full tables are behind "Show Markdown"; the rows as data (what
`upstream approve` prints) are one JSON entry.
"""

from __future__ import annotations

from typing import Any

import dagster as dg

from upstream_dagster.conformance.plan import Plan
from upstream_dagster.conformance.proposals import Proposal
from upstream_dagster.defs import launch
from upstream_dagster.defs.presentation import one_line, table_of
from upstream_dagster.spec.models import Policies

WRITEBACK_JOB = "coverage_writeback_job"


def proposals_markdown(batch: Plan) -> str:
    """Every proposal with all it carries, the biggest gain first (behind "Show Markdown")."""
    rows = [
        "| gain | id | asset | requirement | proposed value | evidence | risk | price |",
        "|---:|---|---|---|---|---|---:|---|",
    ]
    for r in batch.records():
        value, evidence = one_line(str(r["value"]), 240), one_line(str(r["evidence"]), 600)
        rows.append(
            f"| {float(r['points']):+.2f} | {r['id']} | {r['asset']} | {r['requirement']} | "
            f"{r['change']}: {value} | {evidence} | {float(r['risk']):.3f} | {r['price']} |"
        )
    return "\n".join(rows)


REVIEW_COLUMNS = (
    ("gain", "string", "Conformance points gained, re-scored on a what-if copy of the graph"),
    (
        "proposal",
        "string",
        "The asset, what would be written and where it came from in the graph (in full: "
        "batch_full, or `upstream plan`), and its id",
    ),
)


def _proposed(batch: Plan, p: Proposal) -> str:
    what = f"{launch.GROUPS.get(p.requirement, p.requirement)}: {batch.shown(p)}"
    return (
        f"{batch.display(p.asset)} - {one_line(what, 90)} (from "
        f"{one_line('; '.join(p.evidence), 100)}) {p.id}"
    )


def review_records(batch: Plan) -> Any:
    """The batch, the biggest gain first, in two columns: Dagster shows a table in the
    metadata's value column, about 380 pixels wide beside an asset's definition, and a table
    of more columns pushes every value past its right edge."""
    rows = [
        {
            "gain": f"{p.price.delta_points:+.2f}" if p.price else "not priced",
            "proposal": _proposed(batch, p),
        }
        for p in batch.by_gain()
    ]
    return table_of(REVIEW_COLUMNS, rows)


STAYS_COLUMNS = (
    (
        "violation",
        "string",
        "The asset, what it does not meet, and why nothing is proposed: the rule that decided "
        "and what it found (what every rule found: stays_a_violation)",
    ),
)


def remaining(result: Plan) -> tuple[str, Any]:
    """The violations no proposal closes, each with its own reason: markdown (with what every
    rule found) and a narrow table."""
    lines = ["| asset | tier | requirement | why it stays a violation | what each rule found |"]
    lines.append("|---|---|---|---|---|")
    rows = []
    for u in result.unfixable:
        label = result.display(u.asset)
        looked = "; ".join(u.looked)
        lines.append(
            f"| {label} | {u.tier} | {u.requirement} | {one_line(u.reason, 300)} | "
            f"{one_line(looked, 600)} |"
        )
        rows.append({"violation": f"{label} - {u.requirement}: {u.reason}"})
    return "\n".join(lines), table_of(STAYS_COLUMNS, rows)


def approve_links(result: Plan, nonce: str, policies: Policies) -> dict[str, Any]:
    """Links that open the write-back's launchpad with this batch filled in: all of it, or
    the proposals of one requirement; the reviewer types their name and launches."""
    if not result.proposals or not nonce:
        return {}
    tags = {launch.LAUNCHED_BY: "launchpad"}
    every = launch.batch_config(policies, result.digest, nonce, None)
    how = (
        "**Approve in the launchpad**: the link opens `coverage_writeback_job` with this "
        "batch's digest and one-time value filled in. Type your name after `reviewer:` and "
        "launch. The gate still decides."
    )
    whole = launch.link(
        f"Approve all {len(result.proposals)} proposals",
        launch.launchpad(WRITEBACK_JOB, every, {**tags, launch.APPROVING: "all"}),
    )
    groups: dict[str, list[Proposal]] = {}
    for p in result.by_gain():
        groups.setdefault(launch.GROUPS.get(p.requirement, p.requirement), []).append(p)
    parts = []
    for name, chosen in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        lines = [(p.id, _what(result, p)) for p in chosen]
        config = launch.batch_config(policies, result.digest, nonce, lines)
        label = f"{len(chosen)} {name}"
        url = launch.launchpad(WRITEBACK_JOB, config, {**tags, launch.APPROVING: label})
        parts.append(launch.link(label, url))
    return {
        "approve": dg.MetadataValue.md(f"{how}\n\n{whole}"),
        "approve_some": dg.MetadataValue.md(
            "Only some: each link lists one requirement's proposals, one a line; delete the "
            "line of any you do not approve. " + " · ".join(parts)
        ),
    }


def _what(result: Plan, p: Proposal) -> str:
    """One proposal in a line of run config: its gain, what it sets and on which asset."""
    gain = p.price.delta_points if p.price else 0.0
    value = " ".join(result.shown(p).split())
    value = value if len(value) <= 50 else value[:47] + "..."
    return f"{gain:+.2f} {result.display(p.asset)}: {value}"


def plan_metadata(
    result: Plan, nonce: str = "", policy: str = "", policies: Policies | None = None
) -> dict[str, Any]:
    """What the proposals asset shows, in the order a reviewer reads it."""
    stays, stays_table = remaining(result)
    before, after = result.base.overall.percent, result.projected.overall.percent
    was, will = result.base.descriptions, result.projected.descriptions
    links = approve_links(result, nonce, policies) if policies is not None else {}
    summary = (
        f"{len(result.proposals)} proposals: {before:.1f}% -> {after:.1f}% projected "
        f"({after - before:+.1f} points); {len(result.unfixable)} violations stay, each with "
        f"its reason; {result.deferred} priced proposals wait for the next batch"
    )
    return {
        **({"approve": links["approve"]} if links else {}),
        "batch": summary,
        "why_gains_are_equal": result.gain_note() or "the gains differ: largest first",
        "batch_table": review_records(result),
        "stays_a_violation_table": stays_table,
        **({"approve_some": links["approve_some"]} if links else {}),
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
        "descriptions_before": f"{was.documented} documented, {was.generated} generated, "
        f"{was.missing} missing",
        "descriptions_projected": f"{will.documented} documented, {will.generated} generated, "
        f"{will.missing} missing",
        "batch_full": dg.MetadataValue.md(
            proposals_markdown(result)
            if result.proposals
            else "No proposals: nothing in the graph can close the "
            "remaining violations (see `stays_a_violation`)."
        ),
        "stays_a_violation": dg.MetadataValue.md(stays),
        "batch_records": dg.MetadataValue.json(result.records()),
        "approve_with": dg.MetadataValue.md(
            f"`upstream approve --all --digest {result.digest} --reviewer NAME`, or the "
            "`approve` link above"
        ),
    }
