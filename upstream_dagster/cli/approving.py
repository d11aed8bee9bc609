"""What every approval from the command line shares: the one-time value read from the gate's
store, the signature over it, the reviewer's own DataHub token for the run, the gate asked
before anything is launched; and `upstream trust`, the change of who may approve."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from upstream_dagster import settings as settings_mod
from upstream_dagster.cli.app import app, estate_spec, fail, guarded, lazy, out, plain
from upstream_dagster.errors import UpstreamError

if TYPE_CHECKING:
    from upstream_dagster import gate
    from upstream_dagster.defs import instance
    from upstream_dagster.services import approval
    from upstream_dagster.spec.models import Policies
    from upstream_dagster.state import approvals, keys
else:  # imported when a command first uses them (the gate's signatures load cryptography)
    instance = lazy("upstream_dagster.defs.instance")
    gate = lazy("upstream_dagster.gate")
    approval = lazy("upstream_dagster.services.approval")
    approvals = lazy("upstream_dagster.state.approvals")
    keys = lazy("upstream_dagster.state.keys")

TOKEN_ENV = "DATAHUB_REVIEWER_TOKEN"  # where `approve` reads the reviewer's own DataHub token


def signed(policies: Policies, message: bytes, reviewer: str, key: Path | None) -> str:
    """The reviewer's signature over ``message``, when the policy asks for one (else nothing:
    a typed name is taken at its word, as the file says)."""
    if policies.identity != "signed" or reviewer not in policies.approvers:
        return ""
    path = key or keys.default_key(reviewer)
    return guarded(lambda: keys.sign_message(path, message, reviewer))


@dataclass(frozen=True)
class Approving:
    """What the run that writes will carry: the one-time value, the signature, the token."""

    nonce: str
    proof: str
    token: str
    dry_run: str = ""  # set when the policy writes nothing, and why


def prepare(
    settings: settings_mod.Settings,
    policies: Policies,
    subject: gate.Subject,
    approved: str,
    reviewer: str,
    key: Path | None,
    token_env: str,
) -> Approving:
    """The gate asked here, before anything is launched: a refusal is one line and an exit."""
    store = guarded(lambda: instance.gate_store(settings))
    held = guarded(lambda: approvals.outstanding(store, subject.kind, subject.digest))
    nonce = held.nonce if held else ""
    policy = gate.policy_digest(policies)
    message = gate.approval_message(subject.kind, approved, reviewer, policy, nonce)
    proof = signed(policies, message, reviewer, key) if nonce else ""
    token = os.environ.get(token_env, "") if policies.identity == "datahub" else ""
    if token and not settings.gms_url:  # DataHub Lite has no users: said before launching
        from upstream_dagster.datahub import whoami

        guarded(lambda: whoami(settings, token))
    request = gate.Request(
        approved, reviewer, proof=proof, nonce=nonce,
        # the run that writes asks DataHub whose the token is; here, only whether one came
        vouched=reviewer if token else "",
        vouch_note="" if token else f"no DataHub token came with it (${token_env} is empty)",
    )  # fmt: skip
    grounds = guarded(
        lambda: approval.grounds(store, policies, subject, nonce, settings.policy_pin)
    )
    decision = gate.decide(policies, request, grounds)
    if decision.verdict == "refuse":
        fail(UpstreamError(f"refused: {decision.problem}", decision.fix))
    return Approving(nonce, proof, token, decision.problem if decision.verdict == "dry-run" else "")


@app.command()
def trust(
    reviewer: Annotated[
        str | None,
        typer.Option(help="Approve estate.yaml's policy as an approver of the one in force."),
    ] = None,
    key: Annotated[Path | None, typer.Option(help="Your signing key.")] = None,
    token_env: Annotated[
        str, typer.Option(help="The variable holding your own DataHub token.")
    ] = TOKEN_ENV,
) -> None:
    """Show the policy in force (who may approve, and how); with --reviewer, put estate.yaml's
    policy in force, approved as the policy in force asks."""
    from upstream_dagster.datahub import whoami
    from upstream_dagster.spec.models import Policies

    settings = settings_mod.load()
    policies = estate_spec(settings).policies
    store = guarded(lambda: instance.gate_store(settings))
    state = guarded(lambda: approval.trust_state(store, policies, settings.policy_pin))
    if reviewer is None:
        plain(f"gate store: {store.where}")
        plain(f"estate.yaml: {state.describe()}")
        if not state.ok and state.in_force is not None:
            plain(f"in force: policy {state.in_force.policy}: {state.in_force.body}")
            plain(f"estate.yaml: {gate.policy_body(policies)}")
            plain(f"fix: {state.fix}")
        return
    if state.ok:
        plain(f"nothing to approve: {state.describe()}")
        return
    current = state.in_force
    if current is None:
        fail(UpstreamError(state.problem, state.fix))
    old = Policies.model_validate_json(current.body)
    message = gate.rotation_message(current.policy, state.policy, reviewer)
    proof = signed(old, message, reviewer, key)
    vouched = ""
    if old.identity == "datahub":
        vouched = guarded(lambda: whoami(settings, os.environ.get(token_env, "")))
    done = guarded(lambda: approval.rotate(store, policies, reviewer, proof, vouched))
    out.print(f"in force now: {done.describe()}", highlight=False)
