"""The human gate, as one pure function: may this write-back write, and what?

Both write-backs (a coverage batch, an incident's fix), the command line and the launchpad ask
`decide`; nothing else decides. The policy comes from estate.yaml, never from the request. The
checks run in one order, and the first that fails is the answer:

1. the digest the reviewer approved is the one shown for approval (a stale launch is refused);
2. what was shown is still current (DataHub read again gives the same digest);
3. a dry-run policy writes nothing, for anybody, and says so;
4. an automatic launch writes only under an ``auto`` policy;
5. a person must be on the approvers list and, unless estate.yaml says identity is not
   enforced, prove it: an ed25519 signature over what they approve, by their listed key
   (``signed``), or DataHub naming them as the owner of the token they approved with
   (``datahub``);
6. there must be something to write, where the subject says why there may not be;
7. an automatic launch writes only what is at or below ``max_auto_risk``; the rest waits.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Literal

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from upstream_dagster.spec.models import Policies

Verdict = Literal["write", "dry-run", "refuse"]


@dataclass(frozen=True)
class Request:
    """What a launch asks: the digest the reviewer saw, who they are, whether a sensor asked."""

    approved_digest: str
    reviewer: str
    automatic: bool = False
    proof: str = ""  # base64 ed25519 signature over approval_message(kind, digest, reviewer)
    vouched: str = ""  # the DataHub user the reviewer's own token belongs to, as DataHub said
    vouch_note: str = ""  # why nobody was vouched for (no token came; DataHub refused it)


def approval_message(kind: str, digest: str, reviewer: str) -> bytes:
    """What an approver signs: the kind of thing, its digest and their own name, so a
    signature approves exactly one thing, once, as one person."""
    return f"upstream-approval:{kind}:{digest}:{reviewer}".encode()


def verified(policy: Policies, kind: str, digest: str, reviewer: str, proof: str) -> bool:
    key = policy.approver_keys.get(reviewer)
    if not key or not proof:
        return False
    try:
        public = Ed25519PublicKey.from_public_bytes(base64.b64decode(key))
        public.verify(base64.b64decode(proof), approval_message(kind, digest, reviewer))
    except (InvalidSignature, ValueError):
        return False
    return True


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


def _refuse(problem: str, fix: str) -> Decision:
    return Decision("refuse", problem, fix)


def decide(policy: Policies, request: Request, subject: Subject) -> Decision:
    kind = subject.kind
    if request.approved_digest != subject.digest:
        return _refuse(
            f"stale {kind} digest {request.approved_digest}: the current {kind} is "
            f"{subject.digest}",
            f"approve the {kind} shown now, with digest {subject.digest}",
        )
    if subject.current_digest != subject.digest:
        return _refuse(
            f"the graph changed since this {kind} was planned (digest now "
            f"{subject.current_digest})",
            "run the score job (`upstream plan`) and approve the new batch"
            if kind == "batch"
            else "re-run the reliability job for this incident and approve its new verdict",
        )
    if policy.actuation == "dry-run":
        return Decision(
            "dry-run",
            "dry-run policy in estate.yaml: nothing was written",
            "set policies.actuation to ratify in estate.yaml to let approvers write",
        )
    if request.automatic and policy.actuation != "auto":
        return _refuse(
            f"this launch says it is automatic, but estate.yaml's policy is "
            f"{policy.actuation!r}: only a person on the approvers list may write",
            "a person on the approvers list approves it",
        )
    if not request.automatic and request.reviewer not in policy.approvers:
        return _refuse(
            f"{request.reviewer!r} is not an approver; estate.yaml allows "
            f"{', '.join(policy.approvers) or 'nobody'}",
            "approve as someone listed in policies.approvers, or add them to it",
        )
    if (
        not request.automatic
        and policy.identity == "signed"
        and not verified(policy, kind, subject.digest, request.reviewer, request.proof)
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
