"""What the coverage assets do, kept out of the asset bodies so each stays short."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import dagster as dg

from upstream_dagster.conformance.context import MetadataContext
from upstream_dagster.conformance.plan import Plan, plan, simulate
from upstream_dagster.conformance.proposals import Proposal
from upstream_dagster.settings import Settings
from upstream_dagster.spec import EstateSpec, load_estate
from upstream_dagster.spec.urns import short

WRITEBACK = dg.AssetKey("coverage_writeback")


def git_authors(settings: Settings) -> dict[str, str]:
    """dbt model file (relative to the dbt project, as DataHub records it) -> the author with
    the most commits to it, when the tracked dbt project is in a git repository; else empty."""
    import subprocess
    from collections import Counter

    source = settings.dbt_source_dir
    top = subprocess.run(
        ["git", "-C", str(source), "rev-parse", "--show-toplevel"],
        capture_output=True,
        text=True,
        check=False,
    )
    if top.returncode != 0:
        return {}
    prefix = source.resolve().relative_to(Path(top.stdout.strip()).resolve()).as_posix()
    log = subprocess.run(
        ["git", "-C", str(source), "log", "--format=@%ae", "--name-only", "--", "."],
        capture_output=True,
        text=True,
        check=False,
    )
    counts: dict[str, Counter[str]] = {}
    author = ""
    for line in log.stdout.splitlines():
        if line.startswith("@"):
            author = line[1:].split("@", 1)[0].split("+")[-1]
        elif line.endswith(".sql") and author:
            path = line.removeprefix(f"{prefix}/") if prefix != "." else line
            counts.setdefault(path, Counter())[author] += 1
    return {path: min(c, key=lambda a: (-c[a], a)) for path, c in counts.items()}


def current_context(settings: Settings, as_of_ms: int) -> MetadataContext:
    """DataHub read afresh, at the batch's own instant: only graph changes matter."""
    from upstream_dagster.datahub import open_graph
    from upstream_dagster.datahub.readpath import read_context

    graph = open_graph(settings)
    try:
        return read_context(graph, as_of_ms)
    finally:
        graph.close()


def replan(settings: Settings, spec: EstateSpec, ctx: MetadataContext) -> Plan:
    from upstream_dagster import gate

    return plan(ctx, spec, ctx.as_of_ms, gate.rejected(settings.state_dir), git_authors(settings))


def current_plan(settings: Settings, spec: EstateSpec, as_of_ms: int) -> Plan:
    """Re-read DataHub and plan again at the batch's own instant."""
    return replan(settings, spec, current_context(settings, as_of_ms))


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
            f"({p.price.downstream_top_tier} top tier)"
            if p.price
            else "not priced"
        )
        values = p.effective_change().values
        value = ", ".join(batch.display(v) for v in values)
        rows.append(
            f"| {p.id} | {short(p.asset)} | {p.requirement} | {p.change.kind}: "
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
            f"`upstream approve --all --reviewer NAME` or launch the `coverage_writeback_job` job "
            f"with config `batch_digest: {result.digest}`, `approve: [all]`, `reviewer: NAME`"
        ),
    }


def narrate(result: Plan, spec: EstateSpec, client: Any = None) -> tuple[Plan, dict[str, Any]]:
    """Prose for description proposals when a model key is set; the digest is unchanged."""
    from dataclasses import replace

    from upstream_dagster.narrator import Narrator

    narrator = Narrator(spec.policies.reliability.budgets.model_calls, client)
    if not narrator.enabled:
        return result, {"narrator": "off: no ANTHROPIC_API_KEY, descriptions use the template"}
    proposals = []
    for p in result.proposals:
        if p.change.kind == "set_description":
            prose = narrator.describe(short(p.asset), p.change.values[0], p.evidence)
            p = replace(p, prose=prose) if prose else p
        proposals.append(p)
    meta = {
        "narrator": "on",
        "model_calls": narrator.used,
        "narrator_fell_back": "; ".join(narrator.skipped) or "never",
    }
    return replace(result, proposals=tuple(proposals)), meta


def select(batch: Plan, approve: list[str]) -> tuple[Proposal, ...]:
    if approve == ["all"]:
        return batch.proposals
    known = {p.id: p for p in batch.proposals}
    unknown = [i for i in approve if i not in known]
    if unknown:
        raise dg.Failure(
            f"unknown proposal ids {unknown}; the batch holds {', '.join(known) or 'none'}"
        )
    return tuple(known[i] for i in approve)


def writebacks(instance: dg.DagsterInstance, limit: int = 1000) -> list[dict[str, Any]]:
    """Every write-back's journal entry (newest first), read from Dagster's event log."""
    out = []
    for record in instance.fetch_materializations(WRITEBACK, limit=limit).records:
        event = record.asset_materialization
        if event is None or "journal" not in event.metadata:
            continue
        value = event.metadata["journal"].value
        entry = dict(json.loads(value) if isinstance(value, str) else value)  # type: ignore[arg-type]
        entry["run_id"] = record.run_id
        out.append(entry)
    return out


def reset_batches(instance: dg.DagsterInstance) -> set[str]:
    """Batches an earlier reset already restored."""
    out: set[str] = set()
    key = dg.AssetKey("coverage_reset")
    for record in instance.fetch_materializations(key, limit=1000).records:
        event = record.asset_materialization
        if event is not None and "batches" in event.metadata:
            out.update(json.loads(str(event.metadata["batches"].value)))
    return out


def projected_percent(
    spec: EstateSpec, ctx: MetadataContext, batch: Plan, chosen: tuple[Proposal, ...]
) -> float:
    """The selection's own price: conformance is not additive, so simulate this exact set
    over the context the write-back just read (no second DataHub read)."""
    if chosen == batch.proposals:
        return batch.projected.overall.percent
    return simulate(ctx, spec, chosen, batch.base.as_of_ms).overall.percent


def load_spec(settings: Settings) -> EstateSpec:
    return load_estate(settings.estate_file)
