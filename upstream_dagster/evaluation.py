"""Run a scenario the way production would meet it, and grade what the controller concluded.

break the estate -> find what fails in DataHub (as the sensor would) -> the reliability job per
incident -> compare the verdict with the scenario's `expect`. A scenario with two occurrences
approves the first fix, heals, and breaks again, so the second run starts from memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from upstream_dagster.reliability.scenario import Scenario
from upstream_dagster.settings import Settings
from upstream_dagster.spec.urns import name_matches


@dataclass(frozen=True)
class Outcome:
    scenario: str
    occurrence: int
    key: str
    symptom: str
    verdict: Any  # reliability.verdict.Verdict


def _matches(urn: str | None, name: str | None) -> bool:
    return bool(urn and name and name_matches(urn, name))


def graded(scenario: Scenario, outcome: Outcome) -> str:
    """'correct', 'wrong', or 'not graded' (an incident on a dataset the case does not name)."""
    expect, v = scenario.expect, outcome.verdict
    if expect.abstain:
        return "correct" if not v.concluded else "wrong"
    if expect.symptom and not _matches(outcome.symptom, expect.symptom):
        return "not graded"
    cause = expect.root_cause
    assert cause is not None
    ok = (
        v.concluded
        and _matches(v.cause, cause.dataset)
        and (cause.column is None or (v.column or "").lower() == cause.column.lower())
    )
    return "correct" if ok else "wrong"


def investigate_failing(settings: Settings) -> list[Outcome]:
    from upstream_dagster.cli import run_job
    from upstream_dagster.datahub import open_graph
    from upstream_dagster.datahub.incidents import failing_now, incident_key
    from upstream_dagster.runtime import dagster_instance

    graph = open_graph(settings)
    try:
        runs = failing_now(graph)
    finally:
        graph.close()
    instance = dagster_instance(settings)
    out = []
    for run in runs:
        key = incident_key(run)
        instance.add_dynamic_partitions("incidents", [key])
        result = run_job(settings, "reliability", partition=key)
        verdict = result.output_for_node("incident_verdict")
        out.append(Outcome("", 0, key, verdict.symptom, verdict))
    return out


def approve(settings: Settings, outcome: Outcome, reviewer: str) -> Any:
    from upstream_dagster.cli import run_job

    config = {"verdict_digest": outcome.verdict.digest, "reviewer": reviewer}
    return run_job(
        settings,
        "incident_writeback_job",
        {"ops": {"incident_writeback": {"config": config}}},
        partition=outcome.key,
    )


def run_scenario(settings: Settings, scenario: Scenario, reviewer: str) -> list[Outcome]:
    from dataclasses import replace

    from upstream_dagster.scenarios import break_estate, heal_estate

    outcomes: list[Outcome] = []
    for occurrence in range(1, scenario.occurrences + 1):
        if occurrence > 1:
            heal_estate(settings)
        break_estate(settings, scenario)
        found = [
            replace(o, scenario=scenario.name, occurrence=occurrence)
            for o in investigate_failing(settings)
        ]
        outcomes += found
        if occurrence < scenario.occurrences:
            for o in found:
                if graded(scenario, o) == "correct" and o.verdict.concluded:
                    approve(settings, o, reviewer)
    return outcomes
