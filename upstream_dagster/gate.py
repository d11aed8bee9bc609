"""The human gate, as one pure function: may this write-back write, and what?

Both write-backs (a coverage batch, an incident's fix), the command line and the launchpad ask
`decide`; nothing else decides. The policy comes from estate.yaml, never from the request. The
checks run in one order, and the first that fails is the answer:

1. the digest the reviewer approved is the one shown for approval (a stale launch is refused);
2. what was shown is still current (DataHub read again gives the same digest);
3. a dry-run policy writes nothing, for anybody, and says so (a stop that needs no signature);
4. the policy in estate.yaml is the trusted one: adopted on first use, pinned by the
   deployment, or changed with the approval of an approver of the policy it replaces;
5. it is the policy the batch was planned under;
6. an automatic launch writes only under an ``auto`` policy, and a person must be on the
   approvers list;
7. the approval carries the batch's one-time value, issued when it was planned and spent by
   its write, a reset or a new plan: a replayed approval or stored launch is refused;
8. unless estate.yaml says identity is not enforced, the person proves who they are: an
   ed25519 signature over what they approve (kind, digest, policy, one-time value, their
   name), by their listed key (``signed``), or DataHub naming them as the owner of the token
   their run carried (``datahub``);
9. there must be something to write, where the subject says why there may not be;
10. an automatic launch writes only what is at or below ``max_auto_risk``; the rest waits.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from typing import Literal

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from upstream_dagster.spec.models import Policies

Verdict = Literal["write", "dry-run", "refuse"]


@dataclass(frozen=True)
class Request:
    """What a launch asks: the digest the reviewer saw, the one-time value it was shown with,
    who they are, whether a sensor asked."""

    approved_digest: str
    reviewer: str
    automatic: bool = False
    proof: str = ""  # base64 ed25519 signature over approval_message(...)
    vouched: str = ""  # the DataHub user the run's reviewer token belongs to, as DataHub said
    vouch_note: str = ""  # why nobody was vouched for (no token came; DataHub refused it)
    nonce: str = ""  # the one-time value shown with the digest
    launch: str = ""  # why the launch is not the deployment's own ("" when it is)


def policy_body(policy: Policies) -> str:
    """Who may approve and how, as canonical JSON: approvers, their keys, the identity mode,
    actuation and the automatic risk cap. What an approval covers, and what the trust root
    protects."""
    body = {
        "actuation": policy.actuation,
        "approvers": sorted(policy.approvers),
        "approver_keys": dict(sorted(policy.approver_keys.items())),
        "identity": policy.identity,
        "max_auto_risk": policy.max_auto_risk,
    }
    return json.dumps(body, sort_keys=True)


def policy_digest(policy: Policies) -> str:
    return hashlib.sha256(policy_body(policy).encode()).hexdigest()[:16]


def approval_message(kind: str, digest: str, reviewer: str, policy: str, nonce: str) -> bytes:
    """What an approver signs: the kind of thing, its digest, the policy it was planned under,
    its one-time value and their own name: one thing, once, as one person."""
    return f"upstream-approval:v2:{kind}:{digest}:{policy}:{nonce}:{reviewer}".encode()


def rotation_message(old: str, new: str, reviewer: str) -> bytes:
    """What an approver of the trusted policy signs to let estate.yaml's new policy in force."""
    return f"upstream-policy:{old}:{new}:{reviewer}".encode()


def signature_verifies(policy: Policies, reviewer: str, message: bytes, proof: str) -> bool:
    key = policy.approver_keys.get(reviewer)
    if not key or not proof:
        return False
    try:
        public = Ed25519PublicKey.from_public_bytes(base64.b64decode(key))
        public.verify(base64.b64decode(proof), message)
    except (InvalidSignature, ValueError):
        return False
    return True


def verified(
    policy: Policies, kind: str, digest: str, reviewer: str, proof: str, nonce: str
) -> bool:
    message = approval_message(kind, digest, reviewer, policy_digest(policy), nonce)
    return signature_verifies(policy, reviewer, message, proof)


@dataclass(frozen=True)
class Subject:
    """What would be written: shown with ``digest``; ``current_digest`` is what reading DataHub
    again gives now; ``items`` are (id, risk) of each write; ``empty_reason`` says why there is
    nothing to write when that is a refusal (an investigation that abstained)."""

    kind: str  # "batch" or "fix": how the messages name it
    digest: str
    current_digest: str
    items: tuple[tuple[str, float], ...]
    empty_reason: str | None = None
    nonce: str = ""  # the outstanding one-time value ("" when none is: spent, or never issued)
    nonce_note: str = ""  # what became of the value the request carries, when not outstanding
    planned_policy: str = ""  # the policy digest it was planned under
    untrusted: str = ""  # why estate.yaml's policy is not the trusted one ("" when it is)
    untrusted_fix: str = ""
    written_by: str = ""  # the run that already wrote it ("" when none has)


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    problem: str = ""
    fix: str = ""
    allowed: tuple[str, ...] = ()  # item ids that may be written
    held: tuple[str, ...] = ()  # above max_auto_risk: they wait for a person

    @property
    def writes(self) -> bool:
        return self.verdict == "write"


def _person(name: str) -> str:
    """A user as approvers lists them: ``alice`` and ``urn:li:corpuser:alice`` are one person."""
    return name.removeprefix("urn:li:corpuser:")


def cut(value: str, most: int = 40) -> str:
    """What a launch sent, as a refusal may echo it: a 100 KB digest is not printed whole."""
    return value if len(value) <= most else f"{value[:most]}... ({len(value)} characters)"


def _refuse(problem: str, fix: str) -> Decision:
    return Decision("refuse", problem, fix)


def _one_time(kind: str, request: Request, subject: Subject) -> Decision | None:
    """A refusal unless the request carries the outstanding one-time value."""
    if subject.nonce and request.nonce == subject.nonce:
        return None
    if not request.nonce:
        came = "it carries no one-time value"
    elif subject.nonce_note:
        came = f"its one-time value {cut(request.nonce)} {subject.nonce_note}"
    else:
        came = f"its one-time value {cut(request.nonce)} was never issued for it"
    again = (
        "`upstream approve` again (it reads the current value), or launch with the digest and "
        "the one-time value the proposals asset shows now"
        if kind == "batch"
        else "`upstream approve --incident` again, or launch with the value incident_verdict "
        "shows now"
    )
    if not subject.nonce:
        again = (
            "record the batch again for a new one-time value (`upstream plan --record`, or the "
            "score job), then launch with it; `upstream approve` records it itself"
            if kind == "batch"
            else "re-run the reliability job for this incident, then approve"
        )
    return _refuse(f"this approval of {kind} {subject.digest} cannot be used: {came}", again)


def already_written(kind: str, digest: str, run: str) -> Decision:
    """The refusal of a batch (or a fix) a run already wrote."""
    return _refuse(
        f"{kind} {digest} was already written by run {run}: a {kind} is written at most once",
        "nothing to approve; `upstream reset` undoes it, and "
        + ("a new plan (`upstream plan`) shows what is left"
           if kind == "batch" else "a new failure opens a new incident"),
    )  # fmt: skip


def not_an_approver(policy: Policies, reviewer: str) -> Decision | None:
    """The refusal of a person the policy does not list, known before any batch is read."""
    if reviewer in policy.approvers:
        return None
    return _refuse(
        f"{cut(reviewer)!r} is not an approver; estate.yaml allows "
        f"{', '.join(policy.approvers) or 'nobody'}",
        "approve as someone listed in policies.approvers; a name added there may approve "
        "once an approver of the policy in force approves the change (`upstream trust`)",
    )


def decide(policy: Policies, request: Request, subject: Subject) -> Decision:
    kind = subject.kind
    if request.launch:
        return _refuse(
            request.launch,
            "launch it without those tags (the launchpad's defaults), or from `upstream approve`",
        )
    if request.approved_digest != subject.digest:
        return _refuse(
            f"stale {kind} digest {cut(request.approved_digest)}: the current {kind} is "
            f"{subject.digest}",
            f"approve the {kind} shown now, with digest {subject.digest}",
        )
    if subject.written_by:
        return already_written(kind, subject.digest, subject.written_by)
    if subject.current_digest != subject.digest:
        return _refuse(
            f"the graph changed since this {kind} was planned (digest now "
            f"{subject.current_digest})",
            "run the score job (`upstream plan --record`) and approve the new batch"
            if kind == "batch"
            else "re-run the reliability job for this incident and approve its new verdict",
        )
    if policy.actuation == "dry-run":
        return Decision(
            "dry-run",
            "dry-run policy in estate.yaml: nothing was written",
            "set policies.actuation to ratify in estate.yaml to let approvers write",
        )
    if subject.untrusted:
        return _refuse(subject.untrusted, subject.untrusted_fix)
    if subject.planned_policy != policy_digest(policy):
        return _refuse(
            f"estate.yaml's policy ({policy_digest(policy)}) is not the one this {kind} was "
            f"planned under ({subject.planned_policy or 'none recorded'})",
            "record the batch again (`upstream plan --record`, or the score job) and approve it"
            if kind == "batch"
            else "re-run the reliability job for this incident and approve its new verdict",
        )
    if request.automatic and policy.actuation != "auto":
        return _refuse(
            f"this launch says it is automatic, but estate.yaml's policy is "
            f"{policy.actuation!r}: only a person on the approvers list may write",
            "a person on the approvers list approves it",
        )
    unlisted = not_an_approver(policy, request.reviewer) if not request.automatic else None
    if unlisted is not None:
        return unlisted
    stale = _one_time(kind, request, subject)
    if stale is not None:
        return stale
    if (
        not request.automatic
        and policy.identity == "signed"
        and not verified(
            policy, kind, subject.digest, request.reviewer, request.proof, subject.nonce
        )
    ):
        return _refuse(
            f"{request.reviewer!r} did not prove who they are: estate.yaml requires a signed "
            f"approval, and {'the signature does not verify' if request.proof else 'none came'}"
            + ("" if request.reviewer in policy.approver_keys else " (no key is listed)"),
            f"approve with `upstream approve ... --key YOUR.key` (or paste `upstream sign` "
            f"output into the launchpad's proof); `upstream keygen {request.reviewer}` makes a "
            "key and prints the approver_keys line for estate.yaml",
        )
    if (
        not request.automatic
        and policy.identity == "datahub"
        and _person(request.vouched) != _person(request.reviewer)
    ):
        came = (
            f"DataHub says the token belongs to {request.vouched!r}"
            if request.vouched
            else request.vouch_note or "no DataHub token came with it"
        )
        return _refuse(
            f"{request.reviewer!r} did not prove who they are: estate.yaml says DataHub "
            f"identifies approvers, and {came}",
            "approve from the command line with your own DataHub token in "
            "DATAHUB_REVIEWER_TOKEN (or name the variable with --token-env): it is sent once, to "
            "ask DataHub who you are, and never stored; a launchpad run cannot carry a token",
        )
    if not subject.items and subject.empty_reason:
        return _refuse(
            subject.empty_reason,
            "settle the named probe and re-run the reliability job; nothing is applied on a guess",
        )
    held = tuple(
        i for i, risk in subject.items if request.automatic and risk > policy.max_auto_risk
    )
    allowed = tuple(i for i, _ in subject.items if i not in held)
    if held and not allowed:
        return _refuse(
            f"every item is riskier than max_auto_risk {policy.max_auto_risk}: an automatic "
            "launch may not write them",
            "a person on the approvers list approves it",
        )
    return Decision("write", allowed=allowed, held=held)
