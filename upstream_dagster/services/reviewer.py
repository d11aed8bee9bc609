"""Who DataHub said the reviewer is, handed from the command line to the write-back it launches
in the same process (``identity: datahub``).

The command line asks DataHub once, with the reviewer's own token, and hands over only the
answer, tied to the digest approved: the token goes no further, and nothing is configuration,
stored or logged. A run launched anywhere else (the launchpad, another process) finds nothing
here, so the gate refuses it and says to approve from the command line."""

from __future__ import annotations

from upstream_dagster import gate
from upstream_dagster.spec.models import Policies

_held: dict[str, str] = {}


def hand_over(digest: str, vouched: str) -> None:
    _held.clear()
    _held[digest] = vouched


def take(digest: str) -> str:
    """The vouched name for ``digest`` (once), or "" when none was handed over for it."""
    vouched = _held.get(digest, "")
    _held.clear()
    return vouched


def request(
    policy: Policies, digest: str, reviewer: str, automatic: bool, proof: str
) -> gate.Request:
    """A launch's request to the gate, with whom DataHub vouched for when the policy asks it."""
    if policy.identity != "datahub" or automatic:
        return gate.Request(digest, reviewer, automatic, proof)
    vouched = take(digest)
    note = "" if vouched else "this run was handed no DataHub answer (a launchpad run carries none)"
    return gate.Request(digest, reviewer, automatic, proof, vouched=vouched, vouch_note=note)
