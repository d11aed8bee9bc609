"""The coverage batch as the command line reads it (without a run) and records it (the score
job) for `upstream plan` and `upstream approve`: what the graph plans now, the refusals made
before anything runs, and the batch recorded on the proposals asset for the write-back."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from upstream_dagster import settings as settings_mod
from upstream_dagster.cli.app import fail, guarded, lazy, running
from upstream_dagster.errors import UpstreamError
from upstream_dagster.state.store import GateStore

if TYPE_CHECKING:
    from upstream_dagster import gate, runs
    from upstream_dagster.conformance.plan import Plan
    from upstream_dagster.defs import instance, journal
else:  # imported when a command first uses them
    runs = lazy("upstream_dagster.runs")
    gate = lazy("upstream_dagster.gate")
    instance = lazy("upstream_dagster.defs.instance")
    journal = lazy("upstream_dagster.defs.journal")


def narrated(spec: Any) -> bool:
    """Whether the score job's plan carries a model's prose (ANTHROPIC_API_KEY is set): no
    read can show the text a run will record, so such a plan is recorded."""
    from upstream_dagster.narrator import Narrator

    return Narrator(spec.policies.reliability.budgets.model_calls).enabled


def reading_store(settings: settings_mod.Settings) -> GateStore:
    """The gate's store for a command that plans without a run: opened without Dagster when
    Dagster's storage is the state folder's (its own default), else where the instance says."""
    return GateStore.without_dagster(settings) or instance.gate_store(settings)


DIGEST = re.compile(r"[0-9a-f]{16}")


def readable(
    settings: settings_mod.Settings, spec: Any, reviewer: str, digest: str | None, named: list[str]
) -> Plan:
    """The batch ``digest`` names, as the graph plans it now (a read: no run), or one line and
    an exit before anything runs: no digest or not one, a reviewer the policy does not list, a
    policy not in force, a batch already written, a digest that is not the graph's now (it is
    not shown: read `upstream plan`), an id the batch does not hold."""
    from upstream_dagster import clock, datahub
    from upstream_dagster.services import approval, coverage

    if not digest:
        fail(
            UpstreamError(
                "approve needs the digest of the batch you read",
                "run `upstream plan`, read it, then pass --digest with the digest it prints",
            )
        )
    if not DIGEST.fullmatch(digest):
        fail(
            UpstreamError(
                f"{gate.cut(digest)!r} is not a batch digest (16 characters 0-9 and a-f)",
                "pass the digest `upstream plan` prints on its first line, as printed",
            )
        )
    unlisted = gate.not_an_approver(spec.policies, reviewer)
    if unlisted is not None:
        fail(UpstreamError(f"refused: {unlisted.problem}", unlisted.fix))
    store = guarded(lambda: instance.gate_store(settings))
    trust = guarded(lambda: approval.trust_state(store, spec.policies, settings.policy_pin))
    first = trust.in_force is None and not settings.policy_pin  # a recorded plan adopts it
    if not trust.ok and not first and spec.policies.actuation != "dry-run":
        fail(UpstreamError(f"refused: {trust.problem}", trust.fix))
    refuse_claimed(settings, store, digest)

    def read() -> coverage.Preview:
        with datahub.connected(datahub.Target.of(settings)) as graph:
            return coverage.preview(graph, settings, spec, store, clock.now_ms())

    batch = guarded(read).batch
    if batch.digest != digest:
        fail(
            UpstreamError(
                f"batch {digest} is not what the graph plans now (DataHub, estate.yaml or the "
                "rejected ids changed since `upstream plan` printed it, or it never did)",
                "run `upstream plan` again, read what changed, and approve the digest it prints",
            )
        )
    known_ids(batch.records(), digest, named)
    return batch


def refuse_claimed(settings: settings_mod.Settings, store: GateStore, digest: str) -> None:
    """One line and an exit when batch ``digest`` is claimed: written already, or its
    write-back has not finished (still running, or killed part-way: reset undoes it)."""
    from upstream_dagster.state import claims

    run = guarded(lambda: claims.claimed_by(store, digest))
    if not run:
        return
    read = instance.dagster_instance(settings)
    if journal.unfinished_claim(read, store, digest):
        fail(UpstreamError(*journal.unfinished_note(digest, run)))
    refused = gate.already_written("batch", digest, run)
    fail(UpstreamError(f"refused: {refused.problem}", refused.fix))


def recorded(settings: settings_mod.Settings, spec: Any, digest: str) -> str:
    """The digest the proposals asset holds for the write-back to read: batch ``digest`` as a
    run recorded it, waiting for an approval under estate.yaml's policy; else the score job
    records it now (a new one-time value). A graph that moved meanwhile is refused."""
    from upstream_dagster.state import approvals

    planned = journal.latest(instance.dagster_instance(settings), journal.PROPOSALS)
    store = guarded(lambda: instance.gate_store(settings))
    if planned.get("batch_digest") == digest:
        held = guarded(lambda: approvals.outstanding(store, "batch", digest))
        if held is not None and held.policy == gate.policy_digest(spec.policies):
            return digest
    refuse_claimed(settings, store, digest)  # another approval took it while this one asked
    with running("recording the batch you read (the score job)"):
        now = guarded(lambda: runs.score(settings)).batch.digest
    if now != digest:
        fail(
            UpstreamError(
                f"the graph changed since batch {digest} was shown: it plans another now",
                "run `upstream plan` again, read what changed, and approve the digest it prints",
            )
        )
    return digest


def chosen(
    records: list[dict[str, Any]], ids: list[str] | None, rejected: set[str] | None = None
) -> list[dict[str, Any]]:
    """The batch's rows a reviewer approves (all of them when ``ids`` is None), less the ids
    they reject."""
    out = [dict(r) for r in records if ids is None or str(r.get("id")) in ids]
    return [r for r in out if str(r.get("id")) not in (rejected or set())]


def known_ids(records: Any, batch: str, ids: list[str]) -> None:
    """Every id a reviewer names is one of the planned batch's, checked before anything runs."""
    if not ids or records is None:
        return
    known = {str(r.get("id")) for r in records}
    unknown = [i for i in dict.fromkeys(ids) if i not in known]
    if unknown:
        named = ", ".join(repr(i if len(i) <= 40 else i[:40] + "...") for i in unknown[:5])
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        fail(
            UpstreamError(
                f"batch {batch} has no proposal {named}{more}",
                "pass ids from the first column of `upstream plan` (or --all)",
            )
        )
