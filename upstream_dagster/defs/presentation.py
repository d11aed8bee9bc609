"""What the assets show a person in the Dagster UI: violations, receipts and a verdict as
materialization metadata (the batch: `batch_view`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dagster as dg

from upstream_dagster.datahub.incident_keys import short_id
from upstream_dagster.datahub.model import Receipt
from upstream_dagster.reliability.verdict import Verdict, pull_request_text, rca_markdown
from upstream_dagster.spec.urns import label_of, relation_of, short


def table_of(columns: Sequence[tuple[str, str, str]], rows: list[dict[str, Any]]) -> Any:
    """A Dagster table: typed columns the UI sorts and shows in full."""
    schema = dg.TableSchema(
        columns=[dg.TableColumn(name, kind, description=about) for name, kind, about in columns]
    )
    return dg.MetadataValue.table(records=[dg.TableRecord(r) for r in rows], schema=schema)


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
    return table_of(VIOLATION_COLUMNS, rows)


def one_line(text: str, most: int) -> str:
    """Text fit for a markdown table cell: one line, no pipes, at most ``most`` characters."""
    flat = " ".join(text.replace("|", "/").split())
    return flat if len(flat) <= most else flat[: most - 3] + "..."


def receipts_table(receipts: Sequence[tuple[str, Receipt]]) -> str:
    rows = ["| proposal | urn | aspect | written | detail |", "|---|---|---|---|---|"]
    rows += [
        f"| {pid} | {short(r.urn)} | {r.aspect} | {'yes' if r.written else 'NO'} | {r.detail} |"
        for pid, r in receipts
    ]
    return "\n".join(rows)


EVIDENCE_COLUMNS = (
    ("id", "string", "How the RCA cites it ([E3]); a star when the conclusion rests on it"),
    ("evidence", "string", "What kind it is, and what it says, in full"),
)


def evidence_records(v: Verdict) -> Any:
    """The evidence ledger in two columns (narrow enough to read in the UI), the items the
    conclusion rests on first."""
    cited = set(v.top[0].cites) if v.top else set()
    ledger = sorted(v.ledger, key=lambda e: (e.index not in cited, e.index))
    rows = [
        {
            "id": f"E{e.index}" + (" *" if e.index in cited else ""),
            "evidence": f"({e.kind.replace('_', ' ')}) {e.claim}",
        }
        for e in ledger
    ]
    return table_of(EVIDENCE_COLUMNS, rows)


def patch_markdown(v: Verdict) -> str:
    """The patch as a diff (what approving applies), or why there is none."""
    if v.remedy.diff:
        return f"```diff\n{v.remedy.diff.rstrip()}\n```"
    return f"No patch: {v.remedy.reason or v.remedy.summary}"


def _kept(text: str) -> str:
    stripped = text.lstrip(" ")
    return "\u00a0" * (len(text) - len(stripped)) + stripped


def patch_lines(v: Verdict) -> Any:
    """The patch a line a row: Dagster shows a table in full where it folds a long Markdown
    diff behind a button; a long line wraps, and nothing is cut."""
    lines = v.remedy.diff.rstrip().splitlines() or [patch_markdown(v)]
    # a diff's indentation is what it says: kept with no-break spaces, which HTML keeps
    lines = [line[:1] + _kept(line[1:]) for line in lines]
    return table_of((("diff", "string", "The unified diff approving applies"),),
                    [{"diff": line} for line in lines])  # fmt: skip


def cause_of(v: Verdict) -> str:
    if not v.cause:
        return "none: it abstained (see conclusion)"
    column = f".{v.column}" if v.column else ""
    return f"{relation_of(v.cause)}{column} ({v.failure_class}) in {label_of(v.cause)}"


def verdict_metadata(v: Verdict, approve: str = "") -> dict[str, Any]:
    """What the incident_verdict asset shows, in the order a reviewer reads it: which incident,
    the conclusion, the cause, the patch and the evidence; then the arithmetic."""
    top = v.top
    sim = v.simulation
    return {
        "id": short_id(v.key),
        "dataset": label_of(v.symptom),
        "check": v.key.split("@", 1)[0].partition(":")[2] or v.check.description,
        "conclusion": v.headline(),
        "root_cause": cause_of(v),
        # as the command line prints it (1.00, not 0.9999): one number on every surface
        "confidence": f"{v.confidence:.2f}",
        **({"approve": dg.MetadataValue.md(approve)} if approve else {}),
        "simulation": (
            f"{'the check passes' if sim.passed else 'the check still fails'} with the patch: "
            f"{sim.message}" + (f"; {sim.control_message}" if sim.control_ran else "")
            if sim.ran
            else sim.message
        ),
        "patch": patch_lines(v),
        "evidence": evidence_records(v),
        "owners": ", ".join(short(o) for o in v.owners) or "no owner in DataHub",
        "blast_radius": ", ".join(label_of(c) for c in v.consumers)
        or "no dashboard or chart downstream",
        "confidence_arithmetic": top[1].explain() if top else "no hypothesis cites evidence",
        "risk": dg.MetadataValue.float(round(v.risk.score, 2)),
        "risk_arithmetic": v.risk.explain(),
        "rca": dg.MetadataValue.md(rca_markdown(v)),
        "pull_request": dg.MetadataValue.md(pull_request_text(v) or "no patch to propose"),
        "patch_as_markdown": dg.MetadataValue.md(patch_markdown(v)),
        "concluded": v.concluded,
        "column": v.column or ("none: the cause is a whole dataset" if v.cause else "none"),
        "failure_class": v.failure_class or "none (abstained)",
        "remedy": v.remedy.action,
        "verdict_digest": v.digest,
        "datahub_reads": v.reads,
        "memory_used": v.memory_used,
        "hypotheses": len(v.ranked),
        "narrator": (
            "wrote the RCA summary from the cited evidence"
            if v.summary
            else "off: the RCA summary is the template (no ANTHROPIC_API_KEY, or see notes)"
        ),
    }
