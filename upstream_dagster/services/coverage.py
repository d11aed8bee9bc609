"""The coverage controller's steps: plan a batch, write an approved one, verify, undo.

Each step takes the graph it reads or writes and returns a typed result; none imports Dagster.
The gate itself is `upstream_dagster.gate.decide`; the batch claim is `state.claims`.
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from upstream_dagster import clock, gate
from upstream_dagster.conformance import detection
from upstream_dagster.conformance.context import MetadataContext
from upstream_dagster.conformance.detection import Detection
from upstream_dagster.conformance.plan import Plan, plan, simulate
from upstream_dagster.conformance.proposals import Proposal
from upstream_dagster.datahub import changes
from upstream_dagster.datahub.model import PreImage, Receipt
from upstream_dagster.datahub.protocol import MetadataGraph
from upstream_dagster.datahub.readpath import read_context
from upstream_dagster.errors import UpstreamError
from upstream_dagster.narrator import Narrator
from upstream_dagster.services import approval, observe
from upstream_dagster.services.scoring import dial_of
from upstream_dagster.settings import Settings
from upstream_dagster.spec.models import EstateSpec
from upstream_dagster.spec.urns import short
from upstream_dagster.state import approvals, claims
from upstream_dagster.state.lease import Lease
from upstream_dagster.state.store import GateStore
from upstream_dagster.warehouse.duckdb_warehouse import Warehouse


def git_authors(source: Path) -> dict[str, str]:
    """dbt model file (relative to the dbt project, as DataHub records it) -> the author with
    the most commits to it, when the tracked dbt project is in a git repository; else empty."""
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
    people = {
        path: Counter({a: n for a, n in c.items() if is_person(a)}) for path, c in counts.items()
    }
    return {path: min(c, key=lambda a: (-c[a], a)) for path, c in people.items() if c}


# Git identities that are roles, teams or machines, not a person who can own a dataset.
_NOT_PEOPLE = re.compile(
    r"(^|[-_.])(bot|bots|ci|cd|noreply|no-reply|build|builds|deploy|automation|actions|"
    r"maintainers?|team|admin|administrator|root|support|info|dev|devs|ops|dataops|"
    r"dependabot|renovate|github|gitlab|jenkins)([-_.]|$)|\[bot\]$",
    re.IGNORECASE,
)


def is_person(identity: str) -> bool:
    """A commit author Upstream may name as an owner: not a role or machine account."""
    return bool(identity) and not _NOT_PEOPLE.search(identity)


@dataclass(frozen=True)
class Narration:
    """Whether the narrator wrote prose, how many model calls it made, and why it fell back."""

    on: bool
    model_calls: int = 0
    fell_back: tuple[str, ...] = ()


def narrate(batch: Plan, spec: EstateSpec, client: object = None) -> tuple[Plan, Narration]:
    """Prose for description proposals when a model key is set; the digest is unchanged."""
    narrator = Narrator(
        spec.policies.reliability.budgets.model_calls,
        client,
        spec.policies.reliability.budgets.model_seconds,
    )
    if not narrator.enabled:
        return batch, Narration(False)
    proposals = []
    for p in batch.proposals:
        if p.change.kind == "set_description":
            prose = narrator.describe(short(p.asset), p.change.values[0], p.evidence)
            p = replace(p, prose=prose) if prose else p
        proposals.append(p)
    narration = Narration(True, narrator.used, tuple(narrator.skipped))
    return replace(batch, proposals=tuple(proposals)), narration


@dataclass(frozen=True)
class PlanInputs:
    """What planning reads besides DataHub: the ids reviewers rejected, the dbt model files'
    git authors, and the warehouse a proposed assertion would run in (None: there is none)."""

    rejected: frozenset[str]
    authors: dict[str, str]
    warehouse: Warehouse | None
    detection: Detection | None = None  # the last `upstream detect`, read with the graph


def detection_of(settings: Settings) -> Detection | None:
    """The last fault-detection measurement kept in the state folder (None: never made)."""
    return detection.load(settings.state_dir)


def plan_inputs(settings: Settings, rejected: frozenset[str]) -> PlanInputs:
    """What the score job plans with, for a reader outside Dagster (the assistant): the
    rejected ids it is given, the dbt model files' authors, the deployment's warehouse."""
    warehouse = (
        Warehouse(settings.warehouse, manifest=settings.dbt_manifest)
        if settings.warehouse.exists()
        else None
    )
    authors = git_authors(settings.dbt_source_dir)
    return PlanInputs(rejected, authors, warehouse, detection_of(settings))


def replan(ctx: MetadataContext, spec: EstateSpec, inputs: PlanInputs) -> Plan:
    urns = [a.urn for a in ctx.assets]
    runnable = observe.runnable(inputs.warehouse, urns) if inputs.warehouse else frozenset()
    return plan(ctx, spec, ctx.as_of_ms, inputs.rejected, inputs.authors, runnable)


def current_plan(
    graph: MetadataGraph,
    spec: EstateSpec,
    as_of_ms: int,
    inputs: PlanInputs,
) -> tuple[MetadataContext, Plan]:
    """DataHub read afresh, at the batch's own instant (only graph changes matter), and planned
    again: the digest is the same exactly when nothing the batch depends on changed."""
    ctx = detection.with_detection(read_context(graph, as_of_ms), inputs.detection, spec)
    return ctx, replan(ctx, spec, inputs)


@dataclass(frozen=True)
class Preview:
    """A batch planned without a run (`upstream plan`): what the score job would record now."""

    batch: Plan
    planned_under: str  # the policy it is planned under, and whether it is in force
    claimed_by: str = ""  # the write-back run that took this batch ("" when none has)


def preview(
    graph: MetadataGraph, settings: Settings, spec: EstateSpec, store: GateStore, as_of_ms: int
) -> Preview:
    """DataHub read and the batch planned as the score job's ``proposals`` asset plans it (the
    same inputs, the same digest), writing nothing: no run, no one-time value issued."""
    inputs = plan_inputs(settings, claims.rejected(store))
    _, batch = current_plan(graph, spec, as_of_ms, inputs)
    standing = approval.standing(store, spec.policies, settings.policy_pin)
    return Preview(batch, standing, claims.claimed_by(store, batch.digest) or "")


def select(batch: Plan, approve: Sequence[str], reject: Sequence[str]) -> tuple[Proposal, ...]:
    """The proposals a reviewer chose: ``[all]`` or ids, less the ids they rejected."""
    if list(approve) == ["all"]:
        chosen = batch.proposals
    else:
        known = {p.id: p for p in batch.proposals}
        unknown = [i for i in approve if i not in known]
        if unknown:
            raise UpstreamError(
                f"unknown proposal ids {unknown}",
                f"approve ids of the batch shown: {', '.join(known) or 'it holds none'}",
            )
        chosen = tuple(known[i] for i in approve)
    return tuple(p for p in chosen if p.id not in set(reject))


def subject(batch: Plan, current_digest: str, chosen: tuple[Proposal, ...]) -> gate.Subject:
    return gate.Subject(
        "batch", batch.digest, current_digest, tuple((p.id, p.risk) for p in chosen)
    )


def projected_percent(
    spec: EstateSpec, ctx: MetadataContext, batch: Plan, chosen: tuple[Proposal, ...]
) -> float:
    """The selection's own price: conformance is not additive, so simulate this exact set
    over the context the write-back just read (no second DataHub read)."""
    if chosen == batch.proposals:
        return batch.projected.overall.percent
    return simulate(ctx, spec, chosen, batch.base.as_of_ms).overall.percent


@dataclass(frozen=True)
class BatchWrite:
    """What a write-back wrote: a receipt per write, and the pre-image of each write that
    landed (undo restores them, newest first)."""

    receipts: tuple[tuple[str, Receipt], ...]  # (proposal id, receipt)
    pre_images: tuple[PreImage, ...]

    @property
    def failed(self) -> tuple[tuple[str, Receipt], ...]:
        return tuple((pid, r) for pid, r in self.receipts if not r.written)

    @property
    def written(self) -> int:
        return len(self.receipts) - len(self.failed)


def write_batch(
    graph: MetadataGraph,
    chosen: tuple[Proposal, ...],
    warehouse: Warehouse | None = None,
    run_id: str = "",
    journal: changes.Journal | None = None,
) -> BatchWrite:
    """Each chosen proposal through its change writer; a failing write is a receipt, not an
    exception, and everything that landed keeps its pre-image. Each assertion written is run
    once at once on the warehouse (and on every build after): coverage that runs."""
    receipts: list[tuple[str, Receipt]] = []
    pre_images: list[PreImage] = []
    for p in chosen:
        for receipt, pre in changes.apply(graph, p.asset, p.effective_change(), journal):
            receipts.append((p.id, receipt))
            if receipt.written:
                pre_images.append(pre)
    written = [pre.urn for pre in pre_images if pre.aspect == "assertionInfo"]
    if written and warehouse is not None:
        observe.run_template_checks(graph, warehouse, clock.observed_ms(), run_id, written)
    return BatchWrite(tuple(receipts), tuple(pre_images))


def claim_and_spend(
    store: GateStore, lock: Lease, kind: str, digest: str, nonce: str, claim_key: str,
    run_id: str, reviewer: str,
) -> None:  # fmt: skip
    """Under the write-back lock, in one transaction: the approval's one-time value spent and
    the batch (or fix) claimed. Of two launches with one approval, exactly one gets here."""
    with store.tx() as tx:
        lock.fence(tx)
        if not approvals.spend(
            tx, kind, digest, nonce, f"was used by run {run_id} (approved by {reviewer})"
        ):
            raise claims.BatchRefused(
                f"the approval of {kind} {digest} was used or replaced while this run waited",
                "approve again what is waiting now (`upstream queue`)",
            )
        claims.take(tx, claim_key, run_id, reviewer)


def give_back(store: GateStore, kind: str, digest: str, claim_key: str, why: str) -> bool:
    """The claim released and a fresh one-time value issued: the batch (or fix) waits for an
    approval again; the spent value stays spent."""
    released = claims.release(store, claim_key, why)
    approvals.reissue(store, kind, digest)
    return released


def write_claimed(
    graph: MetadataGraph,
    store: GateStore,
    lock: Lease,
    state_dir: Path,
    digest: str,
    nonce: str,
    run_id: str,
    reviewer: str,
    chosen: tuple[Proposal, ...],
    warehouse: Warehouse | None,
) -> BatchWrite:
    """The batch written at most once, by the holder of the write-back lock: claimed with its
    approval spent, each pre-image made durable before its write (a kill at any instant leaves
    every write undoable, and a holder that lost the lock stops before its next write), and
    the claim released again only when nothing landed (a locked DataHub must not hold the
    batch; a write-back that failed part-way keeps it until `reset` undoes what it wrote)."""
    claim_and_spend(store, lock, "batch", digest, nonce, digest, run_id, reviewer)
    seq = iter(range(1_000_000))

    def durable(pre: PreImage) -> None:
        claims.record(store, state_dir, run_id, next(seq), digest, pre.as_json(), lock.fence)

    try:
        done = write_batch(graph, chosen, warehouse, run_id, journal=durable)
    except BaseException:
        if not claims.recorded(store, run_id):
            give_back(
                store, "batch", digest, digest, "the write-back failed before its first write"
            )
        raise
    if not done.pre_images:  # every write was refused: nothing to undo, the batch waits again
        give_back(store, "batch", digest, digest, "the write-back wrote nothing")
    return done


def measured_percent(
    graph: MetadataGraph, spec: EstateSpec, as_of_ms: int, found: Detection | None = None
) -> float:
    """The dial as DataHub reads now, at the batch's instant: what verify compares."""
    ctx = detection.with_detection(read_context(graph, as_of_ms), found, spec)
    return dial_of(graph, spec, ctx).overall.percent


@dataclass(frozen=True)
class Restored:
    batch: str
    receipt: Receipt


def restore_all(
    graph: MetadataGraph, batches: Sequence[tuple[str, Sequence[PreImage]]]
) -> list[Restored]:
    """Undo: each batch (newest first) restored write by write, in reverse order."""
    out = []
    for digest, pre_images in batches:
        for pre in reversed(pre_images):
            out.append(Restored(digest, changes.restore(graph, pre)))
    return out
