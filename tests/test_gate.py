"""The human gate as one pure function, over its whole truth table: both write-backs, the command
line and the launchpad ask `gate.decide`, so what it answers is what every path does."""

from __future__ import annotations

import itertools

import pytest

from upstream_dagster.gate import Request, Subject, decide
from upstream_dagster.spec.models import Policies

APPROVERS = ["alice"]
ITEMS = (("p-low", 0.1), ("p-high", 0.6))


def policy(actuation: str) -> Policies:
    return Policies(actuation=actuation, approvers=APPROVERS, max_auto_risk=0.3)


def subject(current: bool = True, items: tuple[tuple[str, float], ...] = ITEMS) -> Subject:
    return Subject("batch", "d1", "d1" if current else "d2", items)


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
