"""What an approval stands on, read from the gate's store for `gate.decide`: the policy in force
(the trust root), the policy a batch was planned under, and its one-time value.

`issue` runs where a batch or a verdict is planned: it puts the first policy ever seen in force
(or the deployment's pin) and issues the one-time value an approval must carry. `grounds` runs
where a write-back decides. `rotate` lets a new policy in force with the approval of an
approver of the policy it replaces, proven the way that policy asks (`upstream trust`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from upstream_dagster import gate
from upstream_dagster.errors import UpstreamError
from upstream_dagster.spec.models import Policies
from upstream_dagster.state import approvals, claims
from upstream_dagster.state.store import GateStore

NOT_IN_FORCE = ", NOT in force: "  # how a description says the policy is not in force


@dataclass(frozen=True)
class TrustState:
    policy: str  # estate.yaml's policy digest
    in_force: approvals.Trusted | None  # the trusted policy, when one is
    problem: str = ""  # why estate.yaml's policy is not in force ("" when it is)
    fix: str = ""

    @property
    def ok(self) -> bool:
        return not self.problem

    def describe(self) -> str:
        if self.ok and self.in_force is not None:
            return f"policy {self.policy} (in force: {self.in_force.how})"
        return f"policy {self.policy}{NOT_IN_FORCE}{self.problem}"


CHANGE_FIX = (
    "an approver of the policy in force approves the change: `upstream trust --reviewer NAME` "
    "(with their key or DataHub token, as that policy asks); or put estate.yaml's policies back "
    "as they were"
)


def trust_state(
    store: GateStore, policies: Policies, pin: str | None, adopt_first: bool = False
) -> TrustState:
    digest, body = gate.policy_digest(policies), gate.policy_body(policies)
    current = approvals.trusted(store)
    if pin:
        if pin != digest:
            return TrustState(
                digest,
                current,
                f"the deployment pins policy {pin} (UPSTREAM_POLICY_PIN), and estate.yaml's "
                f"policy is {digest}",
                "put estate.yaml's policies back to the pinned one, or change "
                "UPSTREAM_POLICY_PIN where the code location is deployed",
            )
        if current is None or current.policy != digest:
            replacing = current.policy if current else None
            approvals.adopt(store, digest, body, "pinned by the deployment", replacing)
        return TrustState(digest, approvals.trusted(store))
    if current is None and adopt_first:
        approvals.adopt(store, digest, body, "adopted on first use", None)
        current = approvals.trusted(store)
    if current is None:
        return TrustState(
            digest,
            None,
            "no policy is in force yet (nothing has been planned with this gate store)",
            "record a plan first (`upstream plan --record`, or the score job): the first "
            "recorded plan puts estate.yaml's policy in force",
        )
    if current.policy != digest:
        return TrustState(
            digest,
            current,
            f"estate.yaml's policy {digest} is not in force: the policy in force is "
            f"{current.policy} ({current.how}); a change to who may approve (approvers, keys, "
            "identity, actuation, max_auto_risk) takes effect only when an approver of the "
            "policy in force approves it",
            CHANGE_FIX,
        )
    return TrustState(digest, current)


def standing(store: GateStore, policies: Policies, pin: str | None) -> str:
    """What `trust_state` says of estate.yaml's policy, written nowhere: for a plan that is only
    read. A policy a recorded plan would put in force (the first ever, or the pinned one) is
    said to be, once the batch is recorded."""
    digest, current = gate.policy_digest(policies), approvals.trusted(store)
    if (current is None or current.policy != digest) and (pin == digest or not (pin or current)):
        how = "pinned by the deployment" if pin else "adopted on first use"
        return f"policy {digest} (in force once a run records a plan: {how})"
    return trust_state(store, policies, pin).describe()


@dataclass(frozen=True)
class Issued:
    nonce: str
    trust: TrustState


def issue(store: GateStore, policies: Policies, kind: str, digest: str, pin: str | None) -> Issued:
    """Where a batch or a verdict is planned: its one-time value, under estate.yaml's policy."""
    trust = trust_state(store, policies, pin, adopt_first=True)
    out = approvals.issue(store, kind, digest, trust.policy)
    return Issued(out.nonce, trust)


def grounds(
    store: GateStore,
    policies: Policies,
    subject: gate.Subject,
    nonce: str,
    pin: str | None,
) -> gate.Subject:
    """``subject`` with what the gate needs from the store: the outstanding one-time value,
    the policy it was issued under, what became of the value the launch carries, and whether
    estate.yaml's policy is in force."""
    trust = trust_state(store, policies, pin)
    key = (subject.kind, subject.digest)
    held = approvals.outstanding(store, *key)
    note = ""
    if nonce and (held is None or held.nonce != nonce):
        note = approvals.fate(store, subject.kind, subject.digest, nonce)
    return replace(
        subject,
        nonce=held.nonce if held else "",
        nonce_note=note,
        planned_policy=held.policy if held else approvals.planned_under(store, *key),
        untrusted=trust.problem,
        untrusted_fix=trust.fix,
        written_by=claims.claimed_by(store, claims.key_for(subject.kind, subject.digest)) or "",
    )


def _policies(body: str) -> Policies:
    return Policies.model_validate(json.loads(body))


def rotate(
    store: GateStore, policies: Policies, reviewer: str, proof: str, vouched: str
) -> TrustState:
    """Put estate.yaml's policy in force, approved by ``reviewer`` as the policy in force asks
    of an approval (a signature by their listed key over the change, DataHub naming them, or
    their name when that policy does not enforce identity)."""
    new, body = gate.policy_digest(policies), gate.policy_body(policies)
    current = approvals.trusted(store)
    if current is None:
        raise UpstreamError("no policy is in force yet", "plan first: the first plan adopts one")
    if current.policy == new:
        return trust_state(store, policies, None)
    old = _policies(current.body)
    if reviewer not in old.approvers:
        raise UpstreamError(
            f"{reviewer!r} is not an approver of the policy in force ({current.policy}: "
            f"{', '.join(old.approvers) or 'nobody'})",
            "an approver of the policy in force approves the change",
        )
    message = gate.rotation_message(current.policy, new, reviewer)
    if old.identity == "signed" and reviewer not in old.approver_keys:
        raise UpstreamError(
            f"the policy in force ({current.policy}) lists no key for {reviewer!r}, so it cannot "
            "tell them from anyone else and nobody can approve a change under it",
            f"the deployment pins the new policy: UPSTREAM_POLICY_PIN={new} where Upstream and "
            "its runs are launched (docs/gate.md)",
        )
    if old.identity == "signed" and not gate.signature_verifies(old, reviewer, message, proof):
        raise UpstreamError(
            f"{reviewer!r} did not prove who they are: the policy in force requires a signature "
            "by their listed key over this change, and "
            + ("it does not verify" if proof else "none came"),
            f"`upstream trust --reviewer {reviewer} --key YOUR.key`",
        )
    if old.identity == "datahub" and vouched.removeprefix("urn:li:corpuser:") != reviewer:
        raise UpstreamError(
            f"{reviewer!r} did not prove who they are: the policy in force says DataHub "
            f"identifies approvers, and it named {vouched or 'nobody'}",
            "put your own DataHub token in DATAHUB_REVIEWER_TOKEN and run it again",
        )
    how = f"approved by {reviewer} ({old.identity}), replacing {current.policy}"
    if not approvals.adopt(store, new, body, how, current.policy):
        raise UpstreamError(
            "the policy in force changed while this change was approved",
            "run `upstream trust` again to see the policy in force now",
        )
    return trust_state(store, policies, None)
