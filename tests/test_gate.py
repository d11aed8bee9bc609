"""The human gate as one pure function, over its whole truth table: both write-backs, the command
line and the launchpad ask `gate.decide`, so what it answers is what every path does."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

import pytest

from upstream_dagster import gate
from upstream_dagster.gate import Decision, Request, Subject
from upstream_dagster.spec.models import Policies

APPROVERS = ["alice"]
ITEMS = (("p-low", 0.1), ("p-high", 0.6))


def policy(actuation: str) -> Policies:
    """Identity not enforced: these tables test everything else the gate decides; the signed
    approvals have their own tests below."""
    return Policies(
        actuation=actuation, approvers=APPROVERS, max_auto_risk=0.3, identity="not-enforced"
    )


def subject(current: bool = True, items: tuple[tuple[str, float], ...] = ITEMS) -> Subject:
    return Subject("batch", "d1", "d1" if current else "d2", items)


NONCE = "n1"


def decide(policy: Policies, request: Request, subject: Subject) -> Decision:
    """The gate, with the grounds the store gives a batch planned under ``policy`` (one-time
    value n1, the policy in force) and a request carrying that value, unless the test says
    otherwise."""
    grounds = replace(
        subject,
        nonce=subject.nonce or NONCE,
        planned_policy=subject.planned_policy or gate.policy_digest(policy),
    )
    return gate.decide(policy, replace(request, nonce=request.nonce or NONCE), grounds)


CASES = list(
    itertools.product(
        ("dry-run", "ratify", "auto"),  # the policy in estate.yaml
        ("alice", "mallory"),  # the reviewer named in the launch
        (False, True),  # launched by the auto sensor
        ("d1", "d0"),  # the digest the launch approved (d1 is the one shown)
        (True, False),  # the graph still reads as it did when planned
    )
)


def expected(actuation: str, reviewer: str, automatic: bool, approved: str, current: bool) -> str:
    """The rule as the issue states it, written independently of the code under test."""
    if approved != "d1" or not current:
        return "refuse"
    if actuation == "dry-run":
        return "dry-run"
    if automatic:
        return "write" if actuation == "auto" else "refuse"
    return "write" if reviewer in APPROVERS else "refuse"


@pytest.mark.parametrize(("actuation", "reviewer", "automatic", "approved", "current"), CASES)
def test_every_combination_gets_the_answer_the_policy_states(
    actuation: str, reviewer: str, automatic: bool, approved: str, current: bool
) -> None:
    decision = decide(policy(actuation), Request(approved, reviewer, automatic), subject(current))
    assert decision.verdict == expected(actuation, reviewer, automatic, approved, current)
    if decision.verdict == "refuse":
        assert decision.problem and decision.fix and not decision.allowed
    if decision.verdict == "write" and automatic:
        # an automatic launch writes only what is at or below max_auto_risk
        assert decision.allowed == ("p-low",) and decision.held == ("p-high",)
    elif decision.verdict == "write":
        assert decision.allowed == ("p-low", "p-high") and not decision.held


def test_refusals_name_the_problem_and_the_fix() -> None:
    stale = decide(policy("ratify"), Request("d0", "alice"), subject())
    assert "stale batch digest d0" in stale.problem and "d1" in stale.fix
    moved = decide(policy("ratify"), Request("d1", "alice"), subject(current=False))
    assert "graph changed" in moved.problem and "upstream plan" in moved.fix
    stranger = decide(policy("ratify"), Request("d1", "mallory"), subject())
    assert "'mallory' is not an approver" in stranger.problem and "alice" in stranger.problem
    robot = decide(policy("ratify"), Request("d1", "upstream-auto", True), subject())
    assert "only a person on the approvers list may write" in robot.problem


def test_an_automatic_launch_with_nothing_under_the_risk_cap_writes_nothing() -> None:
    risky = subject(items=(("p-high", 0.6),))
    decision = decide(policy("auto"), Request("d1", "upstream-auto", True), risky)
    assert decision.verdict == "refuse" and "max_auto_risk" in decision.problem


def test_an_abstained_investigation_is_refused_and_an_empty_batch_is_not() -> None:
    abstained = Subject("fix", "v1", "v1", (), "the investigation abstained: no cause")
    decision = decide(policy("ratify"), Request("v1", "alice"), abstained)
    assert decision.verdict == "refuse" and "abstained" in decision.problem
    # a reviewer may reject a whole batch: nothing to write, and that is not a refusal
    nothing = decide(policy("ratify"), Request("d1", "alice"), subject(items=()))
    assert nothing.verdict == "write" and nothing.allowed == ()


def test_dry_run_writes_nothing_for_anybody() -> None:
    for reviewer, automatic in (("alice", False), ("mallory", False), ("robot", True)):
        decision = decide(policy("dry-run"), Request("d1", reviewer, automatic), subject())
        assert decision.verdict == "dry-run" and "nothing was written" in decision.problem


def _keyed(tmp_path: Path) -> tuple[Policies, Path]:
    from upstream_dagster.state import keys

    key = tmp_path / "alice.key"
    public = keys.generate(key)
    return Policies(
        actuation="ratify", approvers=["alice", "bob"], approver_keys={"alice": public}
    ), key


def test_a_signed_approval_writes_and_a_typed_name_alone_is_refused(tmp_path: Path) -> None:
    from upstream_dagster.state import keys

    signed, key = _keyed(tmp_path)
    proof = keys.sign(key, "batch", "d1", "alice", gate.policy_digest(signed), NONCE)
    assert decide(signed, Request("d1", "alice", proof=proof), subject()).verdict == "write"
    typed = decide(signed, Request("d1", "alice"), subject())
    assert typed.verdict == "refuse" and "did not prove who they are" in typed.problem
    assert "upstream keygen alice" in typed.fix
    # a signature approves one thing, as one person: not another batch, not another name
    other = decide(signed, Request("d2", "alice", proof=proof), Subject("batch", "d2", "d2", ITEMS))
    assert other.verdict == "refuse" and "does not verify" in other.problem
    as_bob = decide(signed, Request("d1", "bob", proof=proof), subject())
    assert as_bob.verdict == "refuse" and "no key is listed" in as_bob.problem
    fix = decide(signed, Request("d1", "alice", proof=proof), Subject("fix", "d1", "d1", ITEMS))
    assert fix.verdict == "refuse"  # signed for a batch, not for a fix
    forged = decide(signed, Request("d1", "alice", proof="A" * 88), subject())
    assert forged.verdict == "refuse"


def test_a_key_is_never_overwritten_and_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    from upstream_dagster.errors import UpstreamError
    from upstream_dagster.state import keys

    _, key = _keyed(tmp_path)
    assert key.stat().st_mode & 0o077 == 0
    with pytest.raises(UpstreamError, match="already holds a key"):
        keys.generate(key)


def test_estate_yaml_refuses_a_key_for_someone_who_is_not_an_approver() -> None:
    import pydantic

    with pytest.raises(pydantic.ValidationError, match="not in approvers"):
        Policies(actuation="ratify", approvers=["alice"], approver_keys={"eve": "A" * 43 + "="})


def test_datahub_identity_writes_only_for_the_person_datahub_vouched_for() -> None:
    """identity: datahub: the reviewer's own DataHub token, carried by the run that writes,
    names them (the run asks DataHub itself); a typed name, someone else's token, or a
    launchpad run (which carries no token) is refused with the way to approve."""
    from upstream_dagster.errors import UpstreamError
    from upstream_dagster.services import reviewer

    datahub = Policies(actuation="ratify", approvers=APPROVERS, identity="datahub")
    ok = decide(datahub, Request("d1", "alice", vouched="alice"), subject())
    assert ok.verdict == "write"
    as_urn = decide(datahub, Request("d1", "alice", vouched="urn:li:corpuser:alice"), subject())
    assert as_urn.verdict == "write"
    typed = decide(datahub, Request("d1", "alice"), subject())
    assert typed.verdict == "refuse" and "no DataHub token came" in typed.problem
    assert "DATAHUB_REVIEWER_TOKEN" in typed.fix and "launchpad" in typed.fix
    stolen = decide(datahub, Request("d1", "alice", vouched="mallory"), subject())
    assert stolen.verdict == "refuse" and "belongs to 'mallory'" in stolen.problem

    # the run asks DataHub about the token it carries, and nothing else vouches
    asked: list[str] = []

    def datahub_says(token: str) -> str:
        asked.append(token)
        if token != "alice-token":
            raise UpstreamError("DataHub did not accept the reviewer's token (401)", "-")
        return "alice"

    def ask(token: str) -> Request:
        return reviewer.request(datahub, "d1", "alice", False, "", NONCE, token, datahub_says, {})

    assert decide(datahub, ask("alice-token"), subject()).verdict == "write"
    forged = decide(datahub, ask("made-up"), subject())
    assert forged.verdict == "refuse" and "401" in forged.problem
    none = decide(datahub, ask(""), subject())
    assert none.verdict == "refuse" and "carries no reviewer token" in none.problem
    assert asked == ["alice-token", "made-up"]  # an empty token is never sent


def test_a_replayed_or_stale_one_time_value_is_refused_and_says_why() -> None:
    ratify = policy("ratify")
    spent = replace(subject(), nonce="n2", nonce_note="was used by run r1 (approved by alice)")
    replay = gate.decide(
        ratify,
        Request("d1", "alice", nonce="n1"),
        replace(spent, planned_policy=gate.policy_digest(ratify)),
    )
    assert replay.verdict == "refuse" and "was used by run r1" in replay.problem
    none_left = gate.decide(
        ratify,
        Request("d1", "alice", nonce="n1"),
        replace(subject(), nonce="", nonce_note="was used by run r1 (approved by alice)"),
    )
    assert none_left.verdict == "refuse" and "upstream plan --record" in none_left.fix
    missing = decide(ratify, Request("d1", "alice", nonce="n9"), subject())
    assert missing.verdict == "refuse" and "never issued" in missing.problem


def test_what_was_already_written_is_refused_as_written_not_as_a_missing_value() -> None:
    """Approving twice: the second approval is told the first run wrote it, whatever else is
    also wrong with it (its one-time value is spent, the graph moved)."""
    for kind, undo in (("batch", "upstream plan"), ("fix", "new failure")):
        written = replace(subject(current=False), kind=kind, nonce="", written_by="r1")
        again = gate.decide(policy("ratify"), Request("d1", "alice"), written)
        assert again.verdict == "refuse", kind
        assert f"{kind} d1 was already written by run r1" in again.problem
        assert "upstream reset" in again.fix and undo in again.fix


def test_a_policy_not_in_force_or_changed_since_planning_is_refused() -> None:
    ratify = policy("ratify")
    untrusted = replace(
        subject(), untrusted="estate.yaml's policy x is not in force", untrusted_fix="f"
    )
    refused = decide(ratify, Request("d1", "alice"), untrusted)
    assert refused.verdict == "refuse" and "not in force" in refused.problem
    moved = decide(ratify, Request("d1", "alice"), replace(subject(), planned_policy="other"))
    assert moved.verdict == "refuse" and "planned under (other)" in moved.problem
    # a stop always works: dry-run needs no trusted policy
    stop = decide(policy("dry-run"), Request("d1", "alice"), untrusted)
    assert stop.verdict == "dry-run"


def test_a_signature_covers_the_policy_and_the_one_time_value(tmp_path: Path) -> None:
    from upstream_dagster.state import keys

    signed, key = _keyed(tmp_path)
    proof = keys.sign(key, "batch", "d1", "alice", gate.policy_digest(signed), "n1")
    assert decide(signed, Request("d1", "alice", proof=proof), subject()).verdict == "write"
    # the same signature against a new one-time value (after a reset, a new plan): refused
    renewed = replace(subject(), nonce="n2")
    replay = decide(signed, Request("d1", "alice", proof=proof, nonce="n2"), renewed)
    assert replay.verdict == "refuse" and "does not verify" in replay.problem
    # a signature over another policy (someone swapped estate.yaml's keys): refused
    other = keys.sign(key, "batch", "d1", "alice", "0" * 16, "n1")
    assert decide(signed, Request("d1", "alice", proof=other), subject()).verdict == "refuse"


def test_a_launch_carrying_launcher_overrides_is_refused() -> None:
    from upstream_dagster.services import reviewer

    tags = {"dagster-k8s/config": '{"container_config": {"env": []}}'}
    request = reviewer.request(policy("ratify"), "d1", "alice", False, "", NONCE, "", str, tags)
    refused = decide(policy("ratify"), request, subject())
    assert refused.verdict == "refuse" and "dagster-k8s/config" in refused.problem


def test_a_huge_launch_value_is_not_echoed_whole() -> None:
    """A launch's digest, one-time value or reviewer may be anything; a refusal shows its start."""
    huge = "a" * 100_000
    sent = (Request(huge, "alice"), Request("d1", huge), Request("d1", "alice", nonce=huge))
    for request in sent:
        refused = decide(policy("ratify"), request, subject())
        assert refused.verdict == "refuse" and len(refused.problem) < 400, refused.problem[:80]
        assert "(100000 characters)" in refused.problem


@pytest.mark.parametrize("where", ["folder", "huge", "device"])
def test_a_key_path_that_is_no_key_file_is_one_error(tmp_path: Path, where: str) -> None:
    from upstream_dagster.errors import UpstreamError
    from upstream_dagster.state import keys

    path = {"folder": tmp_path, "device": Path("/dev/zero"), "huge": tmp_path / "big.key"}[where]
    if where == "huge":
        path.write_bytes(b"-" * 1_000_000)
    with pytest.raises(UpstreamError) as bad:
        keys.sign_message(path, b"message", "alice")
    assert str(path) in bad.value.problem and "key" in bad.value.fix
