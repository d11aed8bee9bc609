"""Claims, the pre-image ledger and rejections, in the gate's store (`state.store`).

A claim makes a batch (or an incident's fix) written at most once: an INSERT on a primary key,
taken with the approval's one-time value spent in the same transaction, before the first write.
Of two launches at once, in threads, processes or pods, exactly one succeeds; the other is
refused and told which run wrote it. Every aspect's pre-image is made durable before the aspect
is written, in the store and in a ledger file of the state folder (`state.ledger_files`), so a
write-back killed at any instant, or a store lost to a corrupt file, leaves every write undoable.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from upstream_dagster.errors import UpstreamError
from upstream_dagster.state import ledger_files
from upstream_dagster.state.store import GateStore, Tx

Json = dict[str, Any]


class BatchRefused(UpstreamError):
    pass


def alive(host: str, pid: int) -> bool:
    """Whether a process of this host still runs (a process of another host cannot be seen
    from here: its lease says whether it is alive)."""
    if host != socket.gethostname():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def take(tx: Tx, digest: str, run_id: str, reviewer: str) -> None:
    """Inside a store transaction: take ``digest`` for ``run_id``, or refuse (written already)."""
    row = tx.execute(
        "SELECT run_id, reviewer FROM upstream_claims WHERE batch_digest = ?", [digest]
    )
    if row:
        raise BatchRefused(
            f"batch {digest} was already written by run {row[0][0]} (approved by {row[0][1]})",
            "re-run the score job to plan a new batch; a batch is written at most once",
        )
    tx.execute(
        "INSERT INTO upstream_claims VALUES (?, ?, ?, ?)",
        [digest, run_id, reviewer, int(time.time())],
    )


def claim(store: GateStore, digest: str, run_id: str, reviewer: str) -> None:
    """Take the batch for ``run_id``, at most once."""
    with store.tx() as tx:
        take(tx, digest, run_id, reviewer)


def record(
    store: GateStore, state_dir: Path, run_id: str, seq: int, digest: str, pre: Json,
    fence: Any = None,
) -> None:  # fmt: skip
    """An aspect's pre-image, made durable before the aspect is written: in the store, where
    ``fence`` (the write-back lock's check) refuses it if this run no longer holds the lock (the
    aspect is then not written), and in the state folder's ledger file, which outlives a
    corrupt store. Either failing raises before the write."""
    with store.tx() as tx:
        if fence is not None:
            fence(tx)
        tx.execute(
            "INSERT INTO upstream_ledger (run_id, seq, batch_digest, pre_image) VALUES "
            "(?, ?, ?, ?) ON CONFLICT (run_id, seq) DO UPDATE SET pre_image = excluded.pre_image",
            [run_id, seq, digest, json.dumps(pre)],
        )
    ledger_files.append(state_dir, run_id, seq, digest, pre)


def recorded(store: GateStore, run_id: str) -> int:
    """How many pre-images ``run_id`` made durable: writes it may have made."""
    with store.read() as tx:
        (row,) = tx.execute("SELECT count(*) FROM upstream_ledger WHERE run_id = ?", [run_id])
    return int(row[0])


def unfinished(
    store: GateStore, state_dir: Path, finished_runs: set[str]
) -> tuple[list[tuple[str, str, list[Json]]], str]:
    """(digest, run, pre-images in write order) of every write-back in the ledger that is not
    undone and never finished (no journal entry): a run that died part-way. The second value
    says where they were read from when the store could not be read (else "")."""
    note = ""
    try:
        with store.read() as tx:
            rows = tx.execute(
                "SELECT run_id, seq, batch_digest, pre_image FROM upstream_ledger "
                "WHERE undone = 0 ORDER BY run_id, seq"
            )
        found = [(r[0], int(r[1]), r[2], json.loads(r[3])) for r in rows]
    except UpstreamError as exc:  # a corrupt store: the ledger files still hold every write
        found, note = [], f"{exc.problem}; read the ledger files in {state_dir} instead"
    seen = {(r, s) for r, s, _, _ in found}
    found += [row for row in ledger_files.pending(state_dir) if (row[0], row[1]) not in seen]
    out: dict[str, tuple[str, list[Json]]] = {}
    for run_id, _, digest, pre in sorted(found, key=lambda r: (r[0], r[1])):
        if run_id not in finished_runs:
            out.setdefault(run_id, (digest, []))[1].append(pre)
    return [(digest, run, pres) for run, (digest, pres) in out.items()], note


def undone(store: GateStore, state_dir: Path, run_ids: set[str]) -> None:
    """The ledger's writes of these runs were restored."""
    ledger_files.mark_undone(state_dir, run_ids)
    try:
        with store.tx() as tx:
            for run_id in run_ids:
                tx.execute("UPDATE upstream_ledger SET undone = 1 WHERE run_id = ?", [run_id])
    except UpstreamError:
        pass  # a corrupt store: the ledger files say it, and a new store holds no such rows


def release(store: GateStore, digest: str, why: str) -> bool:
    """Give a batch back: its writes were undone, or its write-back wrote nothing. The batch
    may then be approved again, deliberately; the claim moves to ``released`` as the record.
    Returns whether there was a claim to release."""
    with store.tx() as tx:
        row = tx.execute(
            "SELECT run_id, reviewer FROM upstream_claims WHERE batch_digest = ?", [digest]
        )
        if row:
            tx.execute(
                "INSERT INTO upstream_released VALUES (?, ?, ?, ?, ?)",
                [digest, row[0][0], row[0][1], int(time.time()), why],
            )
            tx.execute("DELETE FROM upstream_claims WHERE batch_digest = ?", [digest])
    return bool(row)


def approver_of(store: GateStore, digest: str) -> str:
    """Who approved the claimed batch or fix ('' when nobody holds it)."""
    with store.read() as tx:
        row = tx.execute("SELECT reviewer FROM upstream_claims WHERE batch_digest = ?", [digest])
    return str(row[0][0]) if row else ""


def key_for(kind: str, digest: str) -> str:
    """The claim that makes a batch or an incident's fix ("fix") happen at most once."""
    return digest if kind == "batch" else f"incident-{digest}"


def held(store: GateStore) -> list[tuple[str, str]]:
    """(batch digest, run) of every coverage batch claimed: written, or being written."""
    with store.read() as tx:
        rows = tx.execute("SELECT batch_digest, run_id FROM upstream_claims ORDER BY claimed_at")
    return [(str(d), str(r)) for d, r in rows if not str(d).startswith("incident-")]


def claimed_by(store: GateStore, digest: str) -> str | None:
    with store.read() as tx:
        row = tx.execute("SELECT run_id FROM upstream_claims WHERE batch_digest = ?", [digest])
    return str(row[0][0]) if row else None


def reject(
    store: GateStore, proposal_ids: list[str], digest: str, reviewer: str, reason: str
) -> None:
    with store.tx() as tx:
        for pid in proposal_ids:
            tx.execute(
                "INSERT INTO upstream_rejections VALUES (?, ?, ?, ?) ON CONFLICT (proposal_id) "
                "DO UPDATE SET batch_digest = excluded.batch_digest, "
                "reviewer = excluded.reviewer, reason = excluded.reason",
                [pid, digest, reviewer, reason],
            )


def rejected(store: GateStore) -> frozenset[str]:
    """Proposal ids a reviewer rejected. An id is a hash of the asset, requirement and value, so
    a proposal whose inputs changed gets a new id and is proposed again."""
    with store.read() as tx:
        return frozenset(r[0] for r in tx.execute("SELECT proposal_id FROM upstream_rejections"))
