"""The gate's store on both engines it runs on: the SQLite file of the embedded default and the
deployment's PostgreSQL (a real server from Debian's packages, started by the `postgres`
fixture). Claims, one-time approvals, the trusted policy, the write-back lock and the ledger
behave the same on both, across threads, processes and a holder that dies."""

from __future__ import annotations

import multiprocessing
import signal
import socket
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from upstream_dagster import gate
from upstream_dagster.errors import UpstreamError
from upstream_dagster.evaluation.bench import contend
from upstream_dagster.services import approval
from upstream_dagster.spec.models import Policies
from upstream_dagster.state import approvals, claims, keys, lease, ledger_files
from upstream_dagster.state.store import GateStore

from .conftest import fresh_database


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[GateStore]:
    """A new, empty gate store on each engine."""
    if request.param == "sqlite":
        yield GateStore.local(tmp_path)
        return
    port = request.getfixturevalue("postgres")
    yield GateStore(f"postgresql://dagster@127.0.0.1:{port}/{fresh_database(port)}")


def test_a_batch_is_claimed_once_and_its_approval_spent_once(store: GateStore) -> None:
    issued = approvals.issue(store, "batch", "d1", "p1")
    assert approvals.outstanding(store, "batch", "d1") == issued
    with store.tx() as tx:
        assert approvals.spend(tx, "batch", "d1", issued.nonce, "was used by run r1")
        claims.take(tx, "d1", "r1", "alice")
    with store.tx() as tx:
        assert not approvals.spend(tx, "batch", "d1", issued.nonce, "again")
    with pytest.raises(claims.BatchRefused, match="already written by run r1"):
        claims.claim(store, "d1", "r2", "alice")
    assert approvals.fate(store, "batch", "d1", issued.nonce) == "was used by run r1"
    # given back (a reset): a fresh value, the spent one stays spent
    assert claims.release(store, "d1", "undone")
    fresh = approvals.reissue(store, "batch", "d1")
    assert fresh is not None and fresh.nonce != issued.nonce and fresh.policy == "p1"
    # a new plan of the same batch replaces the value waiting
    newer = approvals.issue(store, "batch", "d1", "p1")
    assert (
        approvals.fate(store, "batch", "d1", fresh.nonce)
        == "was replaced when it was planned again"
    )
    assert approvals.outstanding(store, "batch", "d1") == newer


@pytest.mark.slow
def test_many_processes_taking_the_write_back_lock_never_overlap(
    store: GateStore, tmp_path: Path
) -> None:
    """200 tries from 4 processes started together: no two holds overlap."""
    log = tmp_path / "held.log"
    spawn = multiprocessing.get_context("spawn")
    procs = [
        spawn.Process(target=contend.race, args=(store.url, str(log), 50, seed))
        for seed in range(4)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(300)
        assert proc.exitcode == 0
    held = sorted(tuple(float(x) for x in line.split()) for line in log.read_text().splitlines())
    assert len(held) == 200
    overlaps = [(a, b) for a, b in zip(held, held[1:], strict=False) if b[0] < a[1]]
    assert not overlaps, overlaps[:3]


def test_a_holder_that_died_on_this_host_is_replaced_at_once(store: GateStore) -> None:
    proc = multiprocessing.get_context("spawn").Process(
        target=contend.hold_and_die, args=(store.url,)
    )
    proc.start()
    proc.join(60)
    assert proc.exitcode == -signal.SIGKILL
    # taken on the first try, with no wait at all: not at a lease's expiry, the process is gone
    taken = lease.acquire(store, "next", "after a kill", wait=0)
    lease.release(taken)


def _plant(store: GateStore, host: str, expires_in: float) -> None:
    """A holder on another host (a pod), as its row reads in the store."""
    with store.tx() as tx:
        now = tx.now()
        tx.execute(
            "INSERT INTO upstream_lock VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [lease.WRITEBACK, "t0", "pod-run", host, 1, "coverage batch d0", now, now + expires_in],
        )


def test_a_holder_on_another_host_holds_until_its_lease_expires(store: GateStore) -> None:
    _plant(store, "pod-7", expires_in=60)
    with pytest.raises(lease.LockBusy) as busy:
        lease.acquire(store, "mine", "coverage batch d1", wait=0.3)
    assert "run pod-run (coverage batch d0, pid 1 on pod-7" in busy.value.problem
    assert "replaced within" in busy.value.fix
    with store.tx() as tx:  # the pod died: nobody renews its lease
        tx.execute("UPDATE upstream_lock SET expires_at = ?", [tx.now() - 1])
    lease.release(lease.acquire(store, "mine", "coverage batch d1", wait=1))


def test_a_holder_that_lost_its_lease_makes_no_further_write(
    store: GateStore, tmp_path: Path
) -> None:
    mine = lease.acquire(store, "slow-run", "coverage batch d1", ttl=30)
    claims.record(store, tmp_path, "slow-run", 0, "d1", {"urn": "u", "aspect": "a"}, mine.fence)
    with store.tx() as tx:  # it stalled past its lease, and another write-back took the lock
        tx.execute("UPDATE upstream_lock SET token = 'other', run_id = 'other-run'")
    with pytest.raises(lease.LeaseLost, match="lost the write-back lock"):
        claims.record(
            store, tmp_path, "slow-run", 1, "d1", {"urn": "u2", "aspect": "a"}, mine.fence
        )
    assert claims.recorded(store, "slow-run") == 1  # the second pre-image (and write) never came
    assert [row[1] for row in ledger_files.pending(tmp_path)] == [0]


def _expires(store: GateStore) -> float:
    with store.tx() as tx:
        return float(tx.execute("SELECT expires_at FROM upstream_lock")[0][0])


@pytest.mark.slow
def test_a_held_lease_is_renewed_while_its_write_back_runs(store: GateStore) -> None:
    """Counted in renewals, not seconds: the lease is held past the expiry it was taken with
    (the renewer moved it on twice), and nobody else can take it meanwhile."""
    with lease.held(store, "long-run", "a long write-back", ttl=9.0):
        first = seen = _expires(store)
        renewals = 0
        for _ in range(6000):  # it renews every 3 s; the bound only ends a dead renewer's wait
            time.sleep(0.1)
            if (now := _expires(store)) > seen:
                renewals, seen = renewals + 1, now
            if renewals == 2:
                break
        assert renewals == 2 and seen > first
        with pytest.raises(lease.LockBusy):
            lease.acquire(store, "other", "another write-back", wait=0)
    lease.release(lease.acquire(store, "other", "another write-back", wait=0))


def _policies(tmp_path: Path) -> tuple[Policies, Path]:
    key = tmp_path / "alice.key"
    body: dict[str, Any] = {"actuation": "ratify", "approvers": ["alice", "bob"]}
    body["approver_keys"] = {"alice": keys.generate(key)}
    return Policies.model_validate(body), key


def test_the_first_policy_is_adopted_and_a_change_needs_an_approver_of_it(
    store: GateStore, tmp_path: Path
) -> None:
    first, key = _policies(tmp_path)
    assert approval.issue(store, first, "batch", "d1", None).trust.ok
    # someone edits estate.yaml: their own key for alice, and themselves as an approver
    edited = Policies.model_validate(
        {**first.model_dump(), "approvers": ["alice", "mallory"],
         "approver_keys": {"alice": keys.generate(tmp_path / "m2.key")}}
    )  # fmt: skip
    state = approval.trust_state(store, edited, None)
    assert not state.ok and "not in force" in state.problem and "upstream trust" in state.fix
    subject = approval.grounds(store, edited, gate.Subject("batch", "d1", "d1", ()), "", None)
    assert subject.untrusted
    # the new key's holder cannot approve the change: only the policy in force decides
    message = gate.rotation_message(state.in_force.policy, state.policy, "alice")  # type: ignore[union-attr]
    forged = keys.sign_message(tmp_path / "m2.key", message, "alice")
    with pytest.raises(UpstreamError, match="does not verify"):
        approval.rotate(store, edited, "alice", forged, "")
    with pytest.raises(UpstreamError, match="not an approver of the policy in force"):
        approval.rotate(store, edited, "mallory", forged, "")
    # bob approves under the policy in force, which lists no key for him: it cannot tell him
    # from anyone, so only the deployment's pin can make the change
    with pytest.raises(UpstreamError, match="lists no key for 'bob'") as keyless:
        approval.rotate(store, edited, "bob", forged, "")
    assert f"UPSTREAM_POLICY_PIN={state.policy}" in keyless.value.fix
    # alice, with the key the policy in force lists, approves it
    done = approval.rotate(store, edited, "alice", keys.sign_message(key, message, "alice"), "")
    assert done.ok and "approved by alice (signed)" in done.describe()
    # a dry-run needs nobody's approval: a stop always works
    stop = Policies.model_validate({**first.model_dump(), "actuation": "dry-run"})
    refused = gate.decide(stop, gate.Request("d1", "x"), gate.Subject("batch", "d1", "d1", ()))
    assert refused.verdict == "dry-run"


def test_a_pinned_policy_is_the_only_one_in_force(store: GateStore, tmp_path: Path) -> None:
    first, _ = _policies(tmp_path)
    pin = gate.policy_digest(first)
    assert approval.trust_state(store, first, pin).ok
    other = Policies.model_validate({**first.model_dump(), "approvers": ["alice", "bob", "eve"]})
    state = approval.trust_state(store, other, pin)
    assert not state.ok and "pins policy" in state.problem and "UPSTREAM_POLICY_PIN" in state.fix


def test_a_corrupt_gate_file_is_named_and_reset_still_finds_every_write(tmp_path: Path) -> None:
    good = GateStore.local(tmp_path)
    claims.record(good, tmp_path, "dead-run", 0, "d1", {"urn": "u", "aspect": "a", "value": None})
    (tmp_path / "gate.sqlite").write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        (tmp_path / f"gate.sqlite{suffix}").unlink(missing_ok=True)
    fresh = GateStore.local(tmp_path)
    with pytest.raises(UpstreamError) as bad:
        claims.claimed_by(fresh, "d1")
    assert str(tmp_path / "gate.sqlite") in bad.value.problem and "mv " in bad.value.fix
    found, note = claims.unfinished(fresh, tmp_path, set())
    assert found == [("d1", "dead-run", [{"urn": "u", "aspect": "a", "value": None}])]
    assert "cannot be read" in note and "ledger files" in note


def test_a_gate_file_from_before_the_shared_store_keeps_its_claims_and_ledger(
    tmp_path: Path,
) -> None:
    con = sqlite3.connect(str(tmp_path / "gate.sqlite"))
    con.executescript(
        "CREATE TABLE claims (batch_digest TEXT PRIMARY KEY, run_id TEXT NOT NULL, reviewer TEXT"
        " NOT NULL, claimed_at INTEGER NOT NULL);"
        "CREATE TABLE ledger (run_id TEXT NOT NULL, seq INTEGER NOT NULL, batch_digest TEXT NOT "
        "NULL, pre_image TEXT NOT NULL, undone INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (run_id,"
        " seq));"
        "INSERT INTO claims VALUES ('d0', 'old-run', 'alice', 1);"
        "INSERT INTO ledger VALUES ('old-run', 0, 'd0', '{\"urn\": \"u\"}', 0);"
    )
    con.commit()
    con.close()
    store = GateStore.local(tmp_path)
    assert claims.claimed_by(store, "d0") == "old-run"
    assert claims.unfinished(store, tmp_path, set())[0] == [("d0", "old-run", [{"urn": "u"}])]


def test_the_store_names_where_it_is_without_a_password() -> None:
    store = GateStore("postgresql://dagster:s3cret@db.internal:5432/dagster")
    assert store.shared and "s3cret" not in store.where and "db.internal" in store.where
    assert not GateStore.local(Path("/tmp/x")).shared
    assert socket.gethostname()  # the lock names holders by host


def test_a_store_moved_aside_keeps_the_policy_in_force(tmp_path: Path) -> None:
    """The fix for a corrupt store is to move it aside; a new store must not adopt whatever
    estate.yaml says then (the blind attack: approvers edited, store moved, mallory wrote)."""
    first, _ = _policies(tmp_path)
    assert approval.issue(GateStore.local(tmp_path), first, "batch", "d1", None).trust.ok
    for name in ("gate.sqlite", "gate.sqlite-wal", "gate.sqlite-shm"):
        if (tmp_path / name).exists():
            (tmp_path / name).rename(tmp_path / f"{name}.aside")
    edited = Policies.model_validate({**first.model_dump(), "approvers": ["alice", "mallory"]})
    fresh = GateStore.local(tmp_path)
    issued = approval.issue(fresh, edited, "batch", "d2", None)
    assert not issued.trust.ok and "not in force" in issued.trust.problem
    assert issued.trust.in_force is not None
    assert issued.trust.in_force.policy == gate.policy_digest(first)
    assert "restored from" in issued.trust.in_force.how
    decided = gate.decide(
        edited,
        gate.Request("d2", "mallory", nonce=issued.nonce),
        approval.grounds(fresh, edited, gate.Subject("batch", "d2", "d2", ()), issued.nonce, None),
    )
    assert decided.verdict == "refuse" and "not in force" in decided.problem


def test_a_store_that_is_not_a_file_is_named_with_its_fix(tmp_path: Path) -> None:
    (tmp_path / "gate.sqlite").mkdir()
    with pytest.raises(UpstreamError) as bad:
        claims.claimed_by(GateStore.local(tmp_path), "d1")
    assert (
        "is not a file" in bad.value.problem and str(tmp_path / "gate.sqlite") in bad.value.problem
    )
    assert "mv " in bad.value.fix


def test_reading_a_store_that_does_not_exist_makes_no_file(tmp_path: Path) -> None:
    """The dial, the queue and the assistant's read-only tools read the gate's store; where no
    plan has made it yet they read it as empty and leave no file behind (a read-only tool that
    made one put state into a folder it only reads)."""
    store = GateStore.local(tmp_path)
    assert claims.rejected(store) == frozenset()
    assert claims.claimed_by(store, "d1") is None
    assert approvals.trusted(store) is None
    assert list(tmp_path.iterdir()) == []
    claims.claim(store, "d1", "run-1", "alice")  # a write makes it, and reads then see it
    assert claims.claimed_by(store, "d1") == "run-1"
    assert (tmp_path / "gate.sqlite").is_file()
