"""Upstream's write-back lock: one writer to DataHub at a time, across every run of a deployment.

A row in the gate's store (``upstream_lock``), taken for the whole write-back and given back when
it ends. It is a lease: its holder renews it every few seconds from a thread, so a holder that
dies (a killed process, a lost pod) stops renewing and the lease expires; a holder on this host
whose process is gone is replaced at once. Every pre-image the holder journals checks the lease
first (the fence), so a holder that lost its lease never writes again. Coverage batches,
incident fixes, their resolutions and resets all take the same lock. Dagster's pool and run-tag
limits stay as a first line; this lock does not depend on them.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from upstream_dagster.errors import UpstreamError
from upstream_dagster.state.claims import alive
from upstream_dagster.state.store import GateStore, Tx

WRITEBACK = "datahub-writeback"
TTL_SECONDS = 30.0  # a dead holder on another host is replaced after this long
RENEW_EVERY = 5.0
WAIT_SECONDS = 600.0  # how long a write-back waits for the one in progress


class LockBusy(UpstreamError):
    pass


class LeaseLost(UpstreamError):
    pass


@dataclass(frozen=True)
class Holder:
    run_id: str
    host: str
    pid: int
    purpose: str
    taken_at: float

    def describe(self) -> str:
        return (
            f"run {self.run_id} ({self.purpose}, pid {self.pid} on {self.host}, since "
            f"{time.strftime('%H:%M:%S', time.gmtime(self.taken_at))} UTC)"
        )


@dataclass
class Lease:
    store: GateStore
    name: str
    token: str
    run_id: str
    lost: threading.Event = field(default_factory=threading.Event)

    def fence(self, tx: Tx) -> None:
        """Inside a store transaction: refuse unless this lease is still held and unexpired."""
        row = tx.execute("SELECT token, expires_at FROM upstream_lock WHERE name = ?", [self.name])
        if not row or row[0][0] != self.token or float(row[0][1]) < tx.now():
            self.lost.set()
            raise LeaseLost(
                f"run {self.run_id} lost the write-back lock (it was not renewed in time, and "
                "another write-back may hold it now): it stopped before its next write",
                "`upstream reset` undoes what it wrote; approve again when the other write-back "
                "has finished",
            )


def _try(store: GateStore, name: str, run_id: str, purpose: str, ttl: float) -> Holder | Lease:
    """One attempt: the lease, or who holds it."""
    here, pid = socket.gethostname(), os.getpid()
    with store.tx() as tx:
        now = tx.now()
        row = tx.execute(
            "SELECT run_id, host, pid, purpose, taken_at, expires_at FROM upstream_lock "
            "WHERE name = ?",
            [name],
        )
        if row:
            holder = Holder(str(row[0][0]), str(row[0][1]), int(row[0][2]), str(row[0][3]),
                            float(row[0][4]))  # fmt: skip
            expired = float(row[0][5]) < now
            if not expired and alive(holder.host, holder.pid):
                return holder
        token = secrets.token_hex(16)
        tx.execute(
            "INSERT INTO upstream_lock VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO "
            "UPDATE SET token = excluded.token, run_id = excluded.run_id, host = excluded.host, "
            "pid = excluded.pid, purpose = excluded.purpose, taken_at = excluded.taken_at, "
            "expires_at = excluded.expires_at",
            [name, token, run_id, here, pid, purpose, now, now + ttl],
        )
    return Lease(store, name, token, run_id)


def acquire(
    store: GateStore,
    run_id: str,
    purpose: str,
    wait: float = WAIT_SECONDS,
    ttl: float = TTL_SECONDS,
    on_wait: Callable[[Holder], None] | None = None,
    name: str = WRITEBACK,
) -> Lease:
    """The lease, waiting up to ``wait`` seconds for the holder to finish or die."""
    deadline = time.monotonic() + wait
    pause, told = 0.02, None
    while True:
        got = _try(store, name, run_id, purpose, ttl)
        if isinstance(got, Lease):
            return got
        if on_wait is not None and told != got.run_id:
            on_wait(got)
            told = got.run_id
        if time.monotonic() >= deadline:
            raise LockBusy(
                f"another write-back holds DataHub's write lock: {got.describe()}; waited "
                f"{wait:g}s",
                "let it finish (its run is in the Dagster UI) and approve again; a holder that "
                f"died is replaced within {ttl:g}s",
            )
        time.sleep(pause + secrets.randbelow(50) / 1000)
        pause = min(pause * 2, 0.5)


def _renew(lease: Lease, ttl: float, every: float, stop: threading.Event) -> None:
    while not stop.wait(every):
        try:
            with lease.store.tx() as tx:
                kept = tx.execute(
                    "UPDATE upstream_lock SET expires_at = ? WHERE name = ? AND token = ? "
                    "RETURNING token",
                    [tx.now() + ttl, lease.name, lease.token],
                )
        except UpstreamError:
            continue  # the store is unreachable for now: the fence decides at the next write
        if not kept:
            lease.lost.set()
            return


def release(lease: Lease) -> None:
    with lease.store.tx() as tx:
        tx.execute(
            "DELETE FROM upstream_lock WHERE name = ? AND token = ?", [lease.name, lease.token]
        )


@contextmanager
def held(
    store: GateStore,
    run_id: str,
    purpose: str,
    wait: float = WAIT_SECONDS,
    ttl: float = TTL_SECONDS,
    on_wait: Callable[[Holder], None] | None = None,
) -> Iterator[Lease]:
    """The write-back lock for the length of a block, renewed while it runs."""
    lease = acquire(store, run_id, purpose, wait, ttl, on_wait)
    stop = threading.Event()
    renewer = threading.Thread(
        target=_renew, args=(lease, ttl, min(RENEW_EVERY, ttl / 3), stop), daemon=True
    )
    renewer.start()
    try:
        yield lease
    finally:
        stop.set()
        renewer.join(timeout=10)
        release(lease)
