"""Commands of the coverage controller: plan, approve, verify, reset, and the one queue."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from upstream_dagster import settings as settings_mod
from upstream_dagster.cli import batches
from upstream_dagster.cli.app import (
    app,
    err,
    estate_spec,
    fail,
    guarded,
    lazy,
    out,
    plain,
    running,
    table,
)
from upstream_dagster.cli.approving import TOKEN_ENV, prepare
from upstream_dagster.cli.incidents import approve_incident
from upstream_dagster.errors import UpstreamError

if TYPE_CHECKING:
    from upstream_dagster import gate, runs
    from upstream_dagster.defs import instance, journal
else:  # imported when a command first uses them
    runs = lazy("upstream_dagster.runs")
    gate = lazy("upstream_dagster.gate")
    instance = lazy("upstream_dagster.defs.instance")
    journal = lazy("upstream_dagster.defs.journal")


@app.command()
def plan(
    why: Annotated[
        bool,
        typer.Option(
            "--why/--short",
            help="Under each remaining violation, what every rule that looked found.",
        ),
    ] = True,
    record: Annotated[
        bool,
        typer.Option(
            "--record",
            help="Run the score job instead: the batch recorded on the proposals asset with "
            "the one-time value a launchpad approval carries (what the nightly schedule does).",
        ),
    ] = False,
) -> None:
    """Score the estate and print the priced proposals of the current batch, with its digest,
    and every violation that stays with its reason. A read: DataHub planned as the score job
    plans it, without a run; `upstream approve` records the batch it approves."""
    settings = settings_mod.load()
    spec = estate_spec(settings)
    taken = ""  # the run that took this batch, when a plan without a run finds one
    if record or batches.narrated(spec):  # a model's prose is shown as the run records it, once
        with running("scoring and planning (the score job)"):
            scored = guarded(lambda: runs.score(settings))
        batch, nonce, policy = scored.batch, scored.nonce, scored.policy
    else:
        from upstream_dagster import clock, datahub
        from upstream_dagster.services import coverage
        from upstream_dagster.warehouse.duckdb_warehouse import waiting

        def read() -> coverage.Preview:
            store = batches.reading_store(settings)
            with datahub.connected(datahub.Target.of(settings)) as graph, waiting(err.print):
                return coverage.preview(graph, settings, spec, store, clock.now_ms())

        shown = guarded(read)
        batch, nonce, policy, taken = shown.batch, "", shown.planned_under, shown.claimed_by
    before, after = batch.base.overall.percent, batch.projected.overall.percent
    out.print(
        f"batch {batch.digest}: {len(batch.proposals)} proposals, conformance "
        f"{before:.1f}% -> {after:.1f}% projected ({after - before:+.1f} points)"
    )
    if batch.proposals:
        print_proposals(batch.records(), batch.gain_note())
    was, will = batch.base.descriptions, batch.projected.descriptions
    plain(
        f"descriptions: {was.documented} documented -> {will.documented}, "
        f"{was.generated} generated -> {will.generated} (labelled; counted only where the tier "
        f"accepts generated text), {was.missing} missing -> {will.missing}"
    )
    out.print(
        f"{len(batch.unfixable)} violations stay, each with its reason below; "
        f"{batch.dropped} proposals dropped for no simulated benefit; {batch.deferred} priced "
        "proposals wait for the next batch (max_proposals_per_run)."
    )
    stays = [(u.requirement, batch.display(u.asset), u.reason) for u in batch.unfixable]
    lines = table(("requirement", "asset", "why it stays a violation"), stays)
    if stays:
        plain(lines[0])
    for line, u in zip(lines[1:], batch.unfixable, strict=True):
        plain(line)
        for found in u.looked if why else ():
            plain(f"      {found}")
    plain(f"planned under {policy}")
    for line in how_to_approve(spec.policies.actuation, batch.digest, policy, nonce, taken):
        plain(line)


def how_to_approve(actuation: str, digest: str, policy: str, nonce: str, taken: str) -> list[str]:
    """The lines under a plan that say how its batch is approved, or why it cannot be."""
    from upstream_dagster.services.approval import NOT_IN_FORCE

    if actuation == "dry-run":
        return [
            "approve: the policy is dry-run, so an approval writes nothing (fix: set "
            "policies.actuation to ratify in estate.yaml)"
        ]
    if taken:  # written, or its write-back stopped part-way: approve says which
        return [
            f"approve: batch {digest} was taken by write-back run {taken}; if it died "
            f"part-way, `upstream reset --batch {digest} --yes` undoes it"
        ]
    if NOT_IN_FORCE in policy:  # every approval is refused until it is
        return ["approve: not until estate.yaml's policy is in force (`upstream trust` says how)"]
    how = f"approve: upstream approve --all --digest {digest} --reviewer NAME"
    if nonce:
        return [
            how,
            f"  (in the launchpad: batch_digest {digest}, nonce {nonce}; the one-time value "
            "makes an approval good for one write)",
        ]
    return [  # a read: the proposals asset may hold another batch than this one
        how,
        "  (approve records it in Dagster first; to approve in the Dagster UI instead, "
        "`upstream plan --record` puts this batch on the proposals asset with its one-time "
        "value and an Approve link)",
    ]


PROPOSAL_HEADER = ("id", "gain", "risk", "downstream", "requirement", "asset", "proposed value")


def print_proposals(records: list[dict[str, Any]], note: str = "") -> None:
    """Proposals as an aligned table, the biggest gain first; under each, its evidence."""
    if note:
        plain(note)
    rows = [
        (
            str(r["id"]),
            f"{float(r['points']):+.2f}",
            f"{float(r['risk']):.2f}",
            str(r.get("downstream", "-")),
            str(r["requirement"]),
            str(r["asset"]),
            f"{r['change']}: {r['value']}",
        )
        for r in records
    ]
    lines = table(PROPOSAL_HEADER, rows, right=frozenset({1, 2}))
    plain(lines[0])
    for line, r in zip(lines[1:], records, strict=True):
        plain(line)
        plain(f"      evidence: {r['evidence']}")


@app.command()
def queue() -> None:
    """Print everything waiting on a person (one queue for every controller)."""
    settings = settings_mod.load()
    read = instance.journal(settings)
    meta = journal.latest(read, journal.QUEUE)
    incidents = journal.waiting_incidents(read, instance.read_gate_store(settings, read))
    if meta:
        from upstream_dagster.state import claims

        store = instance.read_gate_store(settings, read)
        for line in str(meta["queue"]).splitlines():
            if line.startswith("- coverage"):  # "- coverage batch DIGEST: ..."
                digest = line.split()[3].rstrip(":")
                written = claims.claimed_by(store, digest)
                if journal.unfinished_claim(read, store, digest):
                    problem, fix = journal.unfinished_note(digest, str(written))
                    plain(f"- coverage {problem}; {fix}")
                elif written:
                    out.print(
                        f"No coverage batch waits: batch {digest} was written by run {written} "
                        "since it was planned; `upstream plan` shows what is left."
                    )
                else:
                    plain(f"{line} (recorded by the last score run: `upstream plan` shows "
                          "what the graph plans now)")  # fmt: skip
    else:
        out.print("No coverage batch planned yet: run `upstream plan` (or the score job).")
    for line in incidents:
        plain(f"- {line}")
    if not incidents:
        out.print("No incident fix is waiting for approval.")


@app.command()
def nudges(
    ui: Annotated[str, typer.Option(help="The Dagster UI's address in the links.")] = "",
) -> None:
    """Print the messages the `nudge` sensor sends now, one per item waiting on a person, as
    the webhook in estate.yaml's policies.notify gets them (try them without one)."""
    from upstream_dagster.defs import notify
    from upstream_dagster.defs.resources import UpstreamResource

    settings = settings_mod.load()
    spec = estate_spec(settings)
    base = ui or (spec.policies.notify.ui_url if spec.policies.notify else "")
    runs_db = instance.dagster_instance(settings)
    upstream = UpstreamResource.of(settings, instance.gate_db(settings, runs_db))
    found = notify.waiting(runs_db, upstream, (base or "http://localhost:3000").rstrip("/"))
    for item in found:
        plain(f"--- {item.key}")
        plain(item.text)
    if not found:
        out.print("Nothing is waiting on a person: no nudge would be sent.")
    where = spec.policies.notify
    plain(
        f"(sent to ${where.webhook_env} by the nudge sensor, each once)"
        if where
        else "(estate.yaml sets no policies.notify: the nudge sensor sends nothing)"
    )


@app.command()
def approve(
    reviewer: Annotated[str, typer.Option(help="Your name; must be an approver in estate.yaml.")],
    digest: Annotated[
        str | None,
        typer.Option(help="The batch digest `upstream plan` printed: you approve what you saw."),
    ] = None,
    ids: Annotated[list[str] | None, typer.Option("--ids", help="Proposal ids to write.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Approve the whole batch.")] = False,
    reject: Annotated[list[str] | None, typer.Option(help="Proposal ids to reject.")] = None,
    reason: Annotated[str, typer.Option(help="Why the rejected ids were rejected.")] = "",
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
    incident: Annotated[
        str | None, typer.Option(help="Approve an incident's fix instead of a coverage batch.")
    ] = None,
    key: Annotated[
        Path | None,
        typer.Option(help="Your signing key (default: the one `upstream keygen NAME` made)."),
    ] = None,
    token_env: Annotated[
        str,
        typer.Option(
            help="The variable holding your own DataHub token, when estate.yaml says "
            "identity: datahub (sent once to ask DataHub who you are; never stored)."
        ),
    ] = TOKEN_ENV,
) -> None:
    """Write the batch `upstream plan` showed (its --digest), or one incident's fix."""
    settings = settings_mod.load()
    if incident:
        approve_incident(settings, incident, reviewer, yes, key, token_env)
        return
    if not all_ and not ids:
        fail(UpstreamError("nothing to approve", "pass --all or --ids ID [--ids ID ...]"))
    if all_ and ids:
        fail(UpstreamError("--all and --ids both given", "pass --all, or the --ids to write"))
    both = sorted(set(ids or []) & set(reject or []))
    if both:
        fail(
            UpstreamError(
                f"{', '.join(map(repr, both[:5]))} both approved and rejected",
                "name each proposal once: with --ids to write it, or --reject to reject it",
            )
        )
    if reject and not reason.strip():
        fail(
            UpstreamError(
                "a rejection is kept (the proposal is not proposed again) and needs its reason",
                "pass --reason 'why' with --reject",
            )
        )
    spec = estate_spec(settings)
    batch = batches.readable(settings, spec, reviewer, digest, [*(ids or []), *(reject or [])])
    if spec.policies.actuation == "dry-run":  # an answer, before anything runs
        out.print(f"batch {batch.digest}: dry-run policy in estate.yaml: nothing was written")
        plain("  fix: set policies.actuation to ratify in estate.yaml to let approvers write")
        return
    rejected = set(reject or [])
    writes = batches.chosen(batch.records(), None if all_ else list(ids or []), rejected)
    chosen = "the whole batch" if all_ and not rejected else f"{len(writes)} of its proposals"
    out.print(
        f"batch {batch.digest}: {len(batch.proposals)} proposals, conformance "
        f"{batch.base.overall.percent:.1f}% -> {batch.projected.overall.percent:.1f}% "
        f"projected; you approve {chosen}:"
    )
    print_proposals(writes)
    if rejected:
        plain(f"and reject {', '.join(sorted(rejected))} (not proposed again): {reason.strip()}")
    asked = (
        "the whole batch" if chosen == "the whole batch" else f"{len(writes)} proposals of batch"
    )
    if not yes and not typer.confirm(f"Write {asked} {batch.digest} to DataHub as {reviewer}?"):
        err.print("nothing was written")
        raise typer.Exit(1)
    current = batches.recorded(settings, spec, batch.digest)
    items = tuple((i, 0.0) for i in (ids or ["all"]))
    shown = gate.Subject("batch", current, current, items)
    ready = prepare(settings, spec.policies, shown, batch.digest, reviewer, key, token_env)
    if ready.dry_run:
        out.print(f"batch {current}: {ready.dry_run}; fix: set policies.actuation to ratify")
        return
    with running(f"writing batch {current} (coverage_writeback_job)"):
        done = guarded(
            lambda: runs.approve_batch(
                settings,
                current,
                ["all"] if all_ else list(ids or []),
                reviewer,
                reject,
                reason,
                ready.proof,
                ready.nonce,
                ready.token,
            )
        )
    if done.result:  # the policy wrote nothing, and says why
        out.print(f"batch {current}: {done.result}")
        return
    out.print(
        f"batch {current}: {done.written} writes, {done.failed} failed "
        f"(policy {done.policy}); projected {done.projected_percent}%"
    )
    if done.failed:
        err.print("some writes failed: the receipts are on the coverage_writeback materialization")
        raise typer.Exit(2)


@app.command()
def verify() -> None:
    """Re-read DataHub and check the measured conformance equals the approved projection."""
    settings = settings_mod.load()
    with running("re-reading DataHub (coverage_verify_job)"):
        done = guarded(lambda: runs.verify(settings))
    out.print(
        f"measured {done.measured}% vs projected {done.projected}%: "
        f"{'equal' if done.equal else 'DIFFERENT'}"
    )
    if not done.equal:
        err.print(
            "DataHub does not read as the last write-back projected: it was changed since (in "
            "DataHub, by another write-back, or a `reset --batch` of part of it); `upstream "
            "score` shows where it stands",
            highlight=False,
        )
        raise typer.Exit(1)


@app.command()
def reset(
    yes: Annotated[bool, typer.Option("--yes", help="Confirm: this rewrites DataHub.")] = False,
    batch: Annotated[str, typer.Option(help="One batch digest, or all.")] = "all",
) -> None:
    """Undo write-backs: restore every aspect they wrote to its value before."""
    if not yes:
        fail(UpstreamError("reset rewrites DataHub", "pass --yes to confirm"))
    settings = settings_mod.load()
    with running("undoing write-backs (coverage_reset_job)"):
        done = guarded(lambda: runs.reset(settings, batch))
    out.print(f"restored {done.restored} aspects (batches {done.batches})")
