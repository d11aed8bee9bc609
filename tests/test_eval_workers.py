"""A live evaluation survives a worker that dies: the case whose process was killed (out of
memory, a signal) is reported failed, and every other case still runs and is graded."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from upstream_dagster.evaluation.grid import Result
from upstream_dagster.evaluation.runner import load_cases, run_suite
from upstream_dagster.evaluation.scenario import Scenario

ROOT = Path(__file__).resolve().parent.parent


def dies_on_the_first_case(
    scenario_json: str, base_state: str, work: str, env: dict[str, str]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Stands in for the case runner (the estate is not the point here): the case named in
    ``env`` kills its own process the way the kernel's OOM killer would; the others succeed."""
    scenario = Scenario.model_validate_json(scenario_json)
    if scenario.name == env["DIES"]:
        os.kill(os.getpid(), signal.SIGKILL)
    return [], {"case": scenario.name}


def test_a_killed_worker_fails_its_own_case_and_the_rest_still_run(tmp_path: Path) -> None:
    cases = load_cases(sorted((ROOT / "evals/cases").glob("*.yaml"))[:4])
    assert len(cases) == 4
    doomed = cases[0].name
    seen: dict[str, tuple[dict[str, Any] | None, str]] = {}

    def done(case: Scenario, rows: list[Result], record: dict[str, Any] | None, err: str) -> None:
        seen[case.name] = (record, err)

    run_suite(cases, tmp_path, 2, done, {"DIES": doomed}, worker=dies_on_the_first_case)

    assert set(seen) == {c.name for c in cases}
    record, err = seen[doomed]
    assert record is None and "BrokenProcessPool" in err, err
    for case in cases[1:]:
        assert seen[case.name] == ({"case": case.name}, ""), seen[case.name]
