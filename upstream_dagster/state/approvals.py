"""One-time approval values and the trusted policy, in the gate's store.

A one-time value is issued when a batch (or an incident's verdict) is planned, under the policy
in force; an approval names it (a signature covers it), and the write that uses it spends it, in
the same transaction as the batch's claim. A new plan of the same thing, or a reset, spends the
outstanding value too. A replayed signature or stored launch therefore finds its value spent,
and the refusal says by what.

The trusted policy is the root of who may approve: the first policy seen is adopted (or the one
the deployment pins, ``UPSTREAM_POLICY_PIN``); a different policy in estate.yaml is in force only
once an approver of the trusted one approves the change (`upstream trust`).
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from upstream_dagster.state import ledger_files
from upstream_dagster.state.store import GateStore, Tx

PIN_ENV = "UPSTREAM_POLICY_PIN"


@dataclass(frozen=True)
class Outstanding:
    nonce: str
    policy: str  # the policy digest it was issued under


def _spend_outstanding(tx: Tx, kind: str, digest: str, why: str) -> None:
    tx.execute(
        "UPDATE upstream_approvals SET spent_at = ?, spent_why = ? WHERE kind = ? AND "
        "digest = ? AND spent_at IS NULL",
        [time.time(), why, kind, digest],
    )


def issue(store: GateStore, kind: str, digest: str, policy: str, why: str = "") -> Outstanding:
    """A new one-time value for ``kind`` ``digest`` under ``policy``; any outstanding one is
    spent ("a new plan issued another")."""
    nonce = secrets.token_hex(8)
    with store.tx() as tx:
        _spend_outstanding(tx, kind, digest, why or "was replaced when it was planned again")
        tx.execute(
            "INSERT INTO upstream_approvals (nonce, kind, digest, policy, issued_at) "
            "VALUES (?, ?, ?, ?, ?)",
            [nonce, kind, digest, policy, time.time()],
        )
    return Outstanding(nonce, policy)


def reissue(store: GateStore, kind: str, digest: str) -> Outstanding | None:
    """A fresh one-time value for something given back (undone by a reset, or a write-back
    that wrote nothing), under the policy its last value was issued under; the old value stays
    spent, so an approval of it cannot be replayed. None when none was ever issued."""
    policy = planned_under(store, kind, digest)
    if not policy:
        return None
    return issue(store, kind, digest, policy, "was replaced when it was given back")


def planned_under(store: GateStore, kind: str, digest: str) -> str:
    """The policy the latest value for ``kind`` ``digest`` was issued under ("" if none was)."""
    with store.read() as tx:
        row = tx.execute(
            "SELECT policy FROM upstream_approvals WHERE kind = ? AND digest = ? "
            "ORDER BY issued_at DESC LIMIT 1",
            [kind, digest],
        )
    return str(row[0][0]) if row else ""


def outstanding(store: GateStore, kind: str, digest: str) -> Outstanding | None:
    with store.read() as tx:
        row = tx.execute(
            "SELECT nonce, policy FROM upstream_approvals WHERE kind = ? AND digest = ? AND "
            "spent_at IS NULL ORDER BY issued_at DESC",
            [kind, digest],
        )
    return Outstanding(str(row[0][0]), str(row[0][1])) if row else None


def fate(store: GateStore, kind: str, digest: str, nonce: str) -> str:
    """What became of a value that is not outstanding, for a refusal ("" if never issued)."""
    with store.read() as tx:
        row = tx.execute(
            "SELECT spent_why FROM upstream_approvals WHERE kind = ? AND digest = ? AND nonce = ?",
            [kind, digest, nonce],
        )
    return str(row[0][0] or "") if row else ""


def spend(tx: Tx, kind: str, digest: str, nonce: str, why: str) -> bool:
    """Inside the claim's transaction: spend ``nonce``; False when it was not outstanding."""
    row = tx.execute(
        "UPDATE upstream_approvals SET spent_at = ?, spent_why = ? WHERE kind = ? AND "
        "digest = ? AND nonce = ? AND spent_at IS NULL RETURNING nonce",
        [time.time(), why, kind, digest, nonce],
    )
    return bool(row)


def spend_all(store: GateStore, kind: str, digest: str, why: str) -> None:
    with store.tx() as tx:
        _spend_outstanding(tx, kind, digest, why)


# -- the trusted policy --------------------------------------------------------------------------
@dataclass(frozen=True)
class Trusted:
    policy: str  # its digest
    body: str  # the policy as JSON, for showing what changed
    how: str  # adopted on first use, pinned by the deployment, approved by NAME ...
    adopted_at: float


def _mirror(store: GateStore) -> Path | None:
    """The second copy of the trusted policy beside a local store (``gate-trust.jsonl``): a
    store moved aside (the fix for a corrupt one) must not put a policy back on first use."""
    return None if store.postgres else Path(store.where).with_name("gate-trust.jsonl")


def _mirrored(store: GateStore) -> Trusted | None:
    path = _mirror(store)
    if path is None or not path.is_file():
        return None
    last = None
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
            last = Trusted(str(row["policy"]), str(row["body"]), str(row["how"]), float(row["at"]))
        except (ValueError, KeyError, TypeError):
            continue  # a torn last line: the change it describes was not made
    return last


def _keep(store: GateStore, policy: str, body: str, how: str, at: float) -> None:
    path = _mirror(store)
    if path is not None:
        ledger_files.append_line(path, {"policy": policy, "body": body, "how": how, "at": at})


def trusted(store: GateStore) -> Trusted | None:
    with store.read() as tx:
        row = tx.execute(
            "SELECT policy, body, how, adopted_at FROM upstream_trust ORDER BY seq DESC LIMIT 1"
        )
    if row:
        found = Trusted(str(row[0][0]), str(row[0][1]), str(row[0][2]), float(row[0][3]))
        mirror = _mirror(store)
        if mirror is not None and not mirror.exists():  # a store from before the second copy
            _keep(store, found.policy, found.body, found.how, found.adopted_at)
        return found
    kept = _mirrored(store)
    if kept is None:
        return None
    # the store was made anew: the policy in force is the one its second copy holds
    how = f"{kept.how}; restored from {_mirror(store)} when the store was made anew"
    with store.tx() as tx:
        if not tx.execute("SELECT 1 FROM upstream_trust LIMIT 1"):
            tx.execute(
                "INSERT INTO upstream_trust VALUES (?, ?, ?, ?, ?)",
                [1, kept.policy, kept.body, how, kept.adopted_at],
            )
    return trusted(store)


def adopt(store: GateStore, policy: str, body: str, how: str, replacing: str | None) -> bool:
    """Put ``policy`` in force, if the policy in force is still ``replacing`` (None: none is);
    False when another change got there first."""
    with store.tx() as tx:
        row = tx.execute("SELECT seq, policy FROM upstream_trust ORDER BY seq DESC LIMIT 1")
        current = str(row[0][1]) if row else None
        if current != replacing:
            return False
        if current == policy:
            return True
        seq = int(row[0][0]) + 1 if row else 1
        at = time.time()
        values = [seq, policy, body, how, at]
        tx.execute("INSERT INTO upstream_trust VALUES (?, ?, ?, ?, ?)", values)
        _keep(store, policy, body, how, at)  # inside the transaction: no second writer between
    return True
