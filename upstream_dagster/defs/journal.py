"""Dagster's event log is the journal: proposal batches, decisions, receipts and undo
pre-images are materialization metadata. This module is the one place that reads them back,
into typed records, for the assets, the sensors and the command line alike."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dagster as dg

from upstream_dagster.datahub.model import PreImage
from upstream_dagster.errors import UpstreamError
from upstream_dagster.state import claims
from upstream_dagster.state.store import GateStore

if TYPE_CHECKING:
    from upstream_dagster.defs.instance import Journal

PROPOSALS = dg.AssetKey("proposals")
QUEUE = dg.AssetKey("approval_queue")
WRITEBACK = dg.AssetKey("coverage_writeback")
RESET = dg.AssetKey("coverage_reset")
VERDICT = dg.AssetKey("incident_verdict")
RESOLUTION = dg.AssetKey("incident_resolution")


def _plain(metadata: Mapping[str, dg.MetadataValue]) -> dict[str, Any]:
    return {k: v.value for k, v in metadata.items()}


def latest(instance: Journal, key: dg.AssetKey) -> dict[str, Any]:
    """The latest materialization's metadata as plain values ({} when there is none)."""
    event = instance.get_latest_materialization_event(key)
    if event is None or event.asset_materialization is None:
        return {}
    return _plain(event.asset_materialization.metadata)


def latest_for(
    instance: Journal, key: dg.AssetKey, partition: str, run_id: str | None = None
) -> dict[str, Any]:
    """The latest materialization of one partition (in one run, when given) as plain values."""
    found = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, asset_partitions=[partition]), limit=20
    ).records
    for record in found:
        if record.asset_materialization and run_id in (None, record.run_id):
            return _plain(record.asset_materialization.metadata)
    return {}


@dataclass(frozen=True)
class Entry:
    """One write-back as the journal keeps it: what it wrote and how to undo it."""

    digest: str  # the batch digest, or incident-<verdict digest>
    run_id: str
    reviewer: str
    written: bool
    pre_images: tuple[PreImage, ...]
    as_of_ms: int = 0
    percent_before: float = 0.0
    projected_percent: float = 0.0
    automatic: bool = False
    approved: tuple[str, ...] = ()
    order: int = 0  # the event log's storage id: later writes have larger ones


def _entry(raw: Any, run_id: str, order: int) -> Entry:
    data = dict(json.loads(raw) if isinstance(raw, str) else raw)
    return Entry(
        digest=str(data["batch_digest"]),
        run_id=run_id,
        reviewer=str(data.get("reviewer", "")),
        written=bool(data.get("written")),
        pre_images=tuple(PreImage.from_json(p) for p in data.get("pre_images", [])),
        as_of_ms=int(data.get("as_of_ms", 0)),
        percent_before=float(data.get("percent_before", 0.0)),
        projected_percent=float(data.get("projected_percent", 0.0)),
        automatic=bool(data.get("automatic", False)),
        approved=tuple(data.get("approved", ())),
        order=order,
    )


def entries(instance: Journal, key: dg.AssetKey = WRITEBACK, limit: int = 1000) -> list[Entry]:
    """Every write-back's journal entry of one asset, newest first."""
    out = []
    for record in instance.fetch_materializations(key, limit=limit).records:
        event = record.asset_materialization
        if event is not None and "journal" in event.metadata:
            out.append(_entry(event.metadata["journal"].value, record.run_id, record.storage_id))
    return out


def written(instance: Journal) -> list[Entry]:
    """The write-backs that wrote something, newest first."""
    return [e for e in entries(instance) if e.written]


def undoable(instance: Journal) -> list[Entry]:
    """Everything Upstream wrote and has not undone yet: coverage batches and incident
    write-backs, newest first. A write undone by a reset is done with; the same batch approved
    again after that reset is a new write, undoable again."""
    resets = reset_orders(instance)
    found = entries(instance, WRITEBACK) + entries(instance, RESOLUTION)
    found = [e for e in found if resets.get(e.digest, -1) < e.order]
    return sorted(found, key=lambda e: e.order, reverse=True)


def finished_runs(instance: Journal) -> set[str]:
    """The write-back runs that got as far as their journal entry."""
    return {e.run_id for e in entries(instance) + entries(instance, RESOLUTION)}


def unfinished_claim(read: Journal, store: GateStore, digest: str) -> str:
    """The run holding batch ``digest``'s claim when that write-back never reached its journal
    entry (still running, or stopped part-way: killed); "" when none holds it or it finished."""
    run = claims.claimed_by(store, digest)
    return run if run and run not in finished_runs(read) else ""


def unfinished_note(digest: str, run: str) -> tuple[str, str]:
    """What a reviewer is told of a batch whose write-back has not finished, and the fix."""
    return (
        f"batch {digest}: its write-back (run {run}) has not finished: still running, or it "
        "stopped part-way (killed)",
        f"if it is not running, `upstream reset --batch {digest} --yes` undoes what it wrote; "
        "then approve the batch again",
    )


def nothing_to_verify(instance: dg.DagsterInstance, store: GateStore) -> UpstreamError | None:
    """Why there is nothing to verify yet, when there is not: a write-back still running or
    stopped part-way (it wrote, and never said what it projected), none made, or every one
    undone by a reset."""
    finished = finished_runs(instance)
    for digest, run in claims.held(store):
        record = instance.get_run_by_id(run)
        if run not in finished and record is not None and not record.is_finished:
            return UpstreamError(
                f"a write-back of batch {digest} is running (run {run})",
                "verify when it has finished (`upstream queue` says when nothing waits)",
            )
        if run not in finished:
            return UpstreamError(
                f"a write-back of batch {digest} stopped part-way (run {run}): there is no "
                "projection to compare DataHub with",
                f"`upstream reset --batch {digest} --yes` undoes what it wrote; then approve "
                "the batch again",
            )
    if not written(instance):
        return UpstreamError(
            "nothing to verify: no write-back has been made yet",
            "`upstream plan`, then `upstream approve --digest DIGEST ...`; verify compares "
            "DataHub with what that approval projected",
        )
    if not undoable(instance):
        return UpstreamError(
            "nothing to verify: a reset undid every write-back",
            "approve a batch again (`upstream plan`, then `upstream approve`), then verify",
        )
    return None


def to_undo(
    instance: dg.DagsterInstance, store: GateStore, state_dir: Path, batch: str = "all"
) -> tuple[list[tuple[str, str, list[PreImage]]], str]:
    """(run, digest, pre-images in write order) of every write not undone yet, one batch or
    all, newest first: the journal's entries, and the ledger's writes of any write-back that
    died part-way (no journal entry, every pre-image made durable before its write). The second
    value is a note when the store could not be read and the ledger files stood in for it."""
    out = [(e.run_id, e.digest, list(e.pre_images)) for e in undoable(instance)]
    done = finished_runs(instance)
    dead, note = claims.unfinished(store, state_dir, done)
    out += [(run_id, digest, [PreImage.from_json(p) for p in raw]) for digest, run_id, raw in dead]
    out = [b for b in out if batch in ("all", b[1])]
    return sorted(out, key=lambda b: started(instance, b[0]), reverse=True), note


def started(instance: dg.DagsterInstance, run_id: str) -> float:
    """When a run was created (0 when Dagster no longer knows it): orders undo, newest first."""
    found = instance.get_run_records(dg.RunsFilter(run_ids=[run_id]), limit=1)
    return found[0].create_timestamp.timestamp() if found else 0.0


def reset_orders(instance: Journal) -> dict[str, int]:
    """Each batch an earlier reset restored -> the event log position of its latest reset."""
    out: dict[str, int] = {}
    for record in instance.fetch_materializations(RESET, limit=1000).records:
        event = record.asset_materialization
        if event is not None and "batches" in event.metadata:
            for digest in json.loads(str(event.metadata["batches"].value)):
                out[digest] = max(out.get(digest, -1), record.storage_id)
    return out


@dataclass(frozen=True)
class VerdictSummary:
    """An incident's latest verdict, as its materialization shows it."""

    key: str
    conclusion: str
    confidence: float
    risk: float
    concluded: bool
    remedy: str
    digest: str
    reads: int
    rca: str

    @property
    def actionable(self) -> bool:
        return self.concluded and self.remedy not in ("none", "escalate")


def summary_of(key: str, meta: dict[str, Any]) -> VerdictSummary:
    return VerdictSummary(
        key,
        str(meta["conclusion"]),
        float(meta["confidence"]),
        float(meta["risk"]),
        bool(meta["concluded"]),
        str(meta["remedy"]),
        str(meta["verdict_digest"]),
        int(meta["datahub_reads"]),
        str(meta.get("rca", "")),
    )


def verdict(instance: Journal, key: str) -> VerdictSummary | None:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=VERDICT, asset_partitions=[key]), limit=1
    ).records
    if not records or records[0].asset_materialization is None:
        return None
    return summary_of(key, _plain(records[0].asset_materialization.metadata))


def by_partition(instance: Journal, key: dg.AssetKey, limit: int) -> dict[str, dict[str, Any]]:
    """Partition -> its latest materialization's metadata as plain values, the partition
    materialized last first (of the ``limit`` latest materializations)."""
    out: dict[str, dict[str, Any]] = {}
    for record in instance.fetch_materializations(key, limit=limit).records:
        mat = record.asset_materialization
        if mat is not None and mat.partition and mat.partition not in out:
            out[mat.partition] = _plain(mat.metadata)
    return out


def verdicts(instance: Journal) -> list[VerdictSummary]:
    """The latest verdict of every incident, by key."""
    return [summary_of(k, m) for k, m in sorted(by_partition(instance, VERDICT, 200).items())]


def waiting_verdicts(instance: Journal, store: GateStore) -> list[VerdictSummary]:
    """Concluded incidents with an actionable fix that nobody has approved yet."""
    return [
        v
        for v in verdicts(instance)
        if v.actionable and not claims.claimed_by(store, claims.key_for("fix", v.digest))
    ]


def waiting_incidents(instance: Journal, store: GateStore) -> list[str]:
    return [
        f"incident {v.key}: {v.conclusion}; fix: {v.remedy} (digest {v.digest})"
        for v in waiting_verdicts(instance, store)
    ]
