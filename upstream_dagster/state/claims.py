"""The one local record besides Dagster's event log: the atomic claim that makes a batch's
write-back happen at most once, and the rejections reviewers recorded.

A SQLite table in the state folder (``gate.sqlite``). The claim is an INSERT on a primary key,
taken before the first write: of two launches at once, in threads or processes, exactly one
succeeds; the other is refused and told which run wrote the batch.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from upstream_dagster.errors import UpstreamError

Json = dict[str, Any]

SCHEMA = """
CREATE TABLE IF NOT EXISTS claims (batch_digest TEXT PRIMARY KEY, run_id TEXT NOT NULL,
                                   reviewer TEXT NOT NULL, claimed_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS holders (batch_digest TEXT PRIMARY KEY, host TEXT NOT NULL,
                                    pid INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS ledger (run_id TEXT NOT NULL, seq INTEGER NOT NULL,
                                   batch_digest TEXT NOT NULL, pre_image TEXT NOT NULL,
                                   undone INTEGER NOT NULL DEFAULT 0,
                                   PRIMARY KEY (run_id, seq));
CREATE TABLE IF NOT EXISTS released (batch_digest TEXT NOT NULL, run_id TEXT NOT NULL,
                                     reviewer TEXT NOT NULL, released_at INTEGER NOT NULL,
                                     why TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS rejections (proposal_id TEXT NOT NULL, batch_digest TEXT NOT NULL,
                                       reviewer TEXT NOT NULL, reason TEXT NOT NULL,
                                       PRIMARY KEY (proposal_id));
"""


class BatchRefused(UpstreamError):
    pass


def _wal(con: sqlite3.Connection) -> None:
    """Switch a new gate file to WAL. The switch needs an exclusive lock and SQLite answers
    "database is locked" at once instead of waiting when another process holds it, so several
    first claims at the same moment retry; once the file is WAL it stays WAL."""
    for attempt in range(100):
        if con.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
            return
        try:
            con.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError:
            if attempt == 99:
                raise
            time.sleep(0.05)


@contextmanager
def _db(state_dir: Path) -> Iterator[sqlite3.Connection]:
    state_dir.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(str(state_dir / "gate.sqlite"), timeout=30, isolation_level=None)
    try:
        _wal(con)
        con.executescript(SCHEMA)
        yield con
    finally:
        con.close()


def alive(host: str, pid: int) -> bool:
    """Whether the process that took a claim still runs (only this host's can be checked; a
    claim from another host counts as alive)."""
    if host != socket.gethostname():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def claim(state_dir: Path, digest: str, run_id: str, reviewer: str) -> None:
    """Take the batch for ``run_id``, at most once. A claim whose process died (killed during
    its write-back, say) is released first, in the ``released`` record: the writes it made
    are in the ledger, and `reset` undoes them."""
    with _db(state_dir) as con:
        con.execute("BEGIN IMMEDIATE")
        row = con.execute(
            "SELECT c.run_id, c.reviewer, h.host, h.pid FROM claims c LEFT JOIN holders h "
            "ON h.batch_digest = c.batch_digest WHERE c.batch_digest = ?",
            [digest],
        ).fetchone()
        if row and row[2] is not None and not alive(row[2], int(row[3])):
            con.execute(
                "INSERT INTO released VALUES (?, ?, ?, ?, ?)",
                [digest, row[0], row[1], int(time.time()), f"its process {row[3]} died"],
            )
            con.execute("DELETE FROM claims WHERE batch_digest = ?", [digest])
            row = None
        if row:
            con.execute("ROLLBACK")
            raise BatchRefused(
                f"batch {digest} was already written by run {row[0]} (approved by {row[1]})",
                "re-run the score job to plan a new batch; a batch is written at most once",
            )
        con.execute(
            "INSERT INTO claims VALUES (?, ?, ?, ?)", [digest, run_id, reviewer, int(time.time())]
        )
        con.execute(
            "INSERT OR REPLACE INTO holders VALUES (?, ?, ?)",
            [digest, socket.gethostname(), os.getpid()],
        )
        con.execute("COMMIT")


def record(state_dir: Path, run_id: str, seq: int, digest: str, pre: Json) -> None:
    """An aspect's pre-image, made durable before the aspect is written: a write-back killed
    at any instant leaves every write it may have made undoable."""
    with _db(state_dir) as con:
        con.execute(
            "INSERT OR REPLACE INTO ledger (run_id, seq, batch_digest, pre_image) "
            "VALUES (?, ?, ?, ?)",
            [run_id, seq, digest, json.dumps(pre)],
        )


def unfinished(state_dir: Path, finished_runs: set[str]) -> list[tuple[str, str, list[Json]]]:
    """(digest, run, pre-images in write order) of every write-back in the ledger that is not
    undone and never finished (no journal entry): a run that died part-way."""
    with _db(state_dir) as con:
        rows = con.execute(
            "SELECT run_id, batch_digest, pre_image FROM ledger WHERE undone = 0 "
            "ORDER BY run_id, seq"
        ).fetchall()
    out: dict[str, tuple[str, list[Json]]] = {}
    for run_id, digest, pre in rows:
        if run_id not in finished_runs:
            out.setdefault(run_id, (digest, []))[1].append(json.loads(pre))
    return [(digest, run, pres) for run, (digest, pres) in out.items()]


def undone(state_dir: Path, run_ids: set[str]) -> None:
    """The ledger's writes of these runs were restored."""
    with _db(state_dir) as con:
        con.executemany("UPDATE ledger SET undone = 1 WHERE run_id = ?", [[r] for r in run_ids])


def release(state_dir: Path, digest: str, why: str) -> bool:
    """Give a batch back: its writes were undone, or its write-back wrote nothing. The batch
    may then be approved again, deliberately; the claim moves to ``released`` as the record.
    Returns whether there was a claim to release."""
    with _db(state_dir) as con:
        con.execute("BEGIN IMMEDIATE")
        row = con.execute(
            "SELECT run_id, reviewer FROM claims WHERE batch_digest = ?", [digest]
        ).fetchone()
        if row:
            con.execute(
                "INSERT INTO released VALUES (?, ?, ?, ?, ?)",
                [digest, row[0], row[1], int(time.time()), why],
            )
            con.execute("DELETE FROM claims WHERE batch_digest = ?", [digest])
        con.execute("COMMIT")
    return row is not None


def approver_of(state_dir: Path, digest: str) -> str:
    """Who approved the claimed batch or fix ('' when nobody holds it)."""
    with _db(state_dir) as con:
        row = con.execute("SELECT reviewer FROM claims WHERE batch_digest = ?", [digest]).fetchone()
    return str(row[0]) if row else ""


def claimed_by(state_dir: Path, digest: str) -> str | None:
    with _db(state_dir) as con:
        row = con.execute("SELECT run_id FROM claims WHERE batch_digest = ?", [digest]).fetchone()
    return str(row[0]) if row else None


def reject(
    state_dir: Path, proposal_ids: list[str], digest: str, reviewer: str, reason: str
) -> None:
    with _db(state_dir) as con:
        con.executemany(
            "INSERT OR REPLACE INTO rejections VALUES (?, ?, ?, ?)",
            [(pid, digest, reviewer, reason) for pid in proposal_ids],
        )


def rejected(state_dir: Path) -> frozenset[str]:
    """Proposal ids a reviewer rejected. An id is a hash of the asset, requirement and value, so
    a proposal whose inputs changed gets a new id and is proposed again."""
    with _db(state_dir) as con:
        return frozenset(r[0] for r in con.execute("SELECT proposal_id FROM rejections"))
