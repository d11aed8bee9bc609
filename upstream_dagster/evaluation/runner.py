"""Run cases the way production would meet them, grade what the controller concluded, and
replay the conclusions from the recorded reads.

A case is a scenario file (faults, the trigger, the expected root cause or abstention). Live:
copy the built estate, break it, find the failing assertion the trigger names in DataHub (as
the sensor would), launch the reliability job for it, and grade its verdict. A case with a
recurrence approves the first fix, heals the estate when the same faults come back, and breaks
it again, so the second run starts from memory. Each case's record keeps every read each
investigation made; `replay_case` recomputes the verdicts from them with no DataHub, warehouse
or key.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from upstream_dagster import healing, runs
from upstream_dagster import settings as settings_mod
from upstream_dagster.datahub import Target, connected
from upstream_dagster.datahub.assertions import assertion_label
from upstream_dagster.datahub.incidents import check_name, failing_now, incident_key, named
from upstream_dagster.datahub.model import AssertionRun, assertion_properties
from upstream_dagster.errors import UpstreamError
from upstream_dagster.evaluation.breakage import break_estate
from upstream_dagster.evaluation.estates import estate_env
from upstream_dagster.evaluation.grid import Result
from upstream_dagster.evaluation.replay import replay
from upstream_dagster.evaluation.scenario import Scenario, Trigger, load_scenario
from upstream_dagster.reliability.verdict import Verdict
from upstream_dagster.reliability.walk import reachable
from upstream_dagster.settings import Settings
from upstream_dagster.spec.models import EstateSpec
from upstream_dagster.spec.urns import name_matches, relation_of
from upstream_dagster.state import records
from upstream_dagster.warehouse.names import renamed_at

EVAL_CLOCK = "2026-11-29T06:00:00Z"  # cases run on a pinned clock: the data is the same each run


@dataclass(frozen=True)
class Outcome:
    """One investigation the reliability job ran."""

    scenario: str
    occurrence: int
    key: str
    symptom: str
    verdict: Verdict
    seconds: float = 0.0
    record: dict[str, Any] | None = None


def _matches(urn: str | None, name: str | None) -> bool:
    return bool(urn and name and name_matches(urn, name))


def _describe(urn: str, column: str | None) -> str:
    return relation_of(urn) + (f".{column}" if column else "")


def expected(scenario: Scenario) -> str:
    cause = scenario.expect.root_cause
    if scenario.expect.abstain or cause is None:
        return "abstain"
    return ".".join(cause.dataset.lower().split(".")[-2:]) + (
        f".{cause.column.lower()}" if cause.column else ""
    )


def result(scenario: Scenario, occurrence: int, outcome: Outcome | None) -> Result:
    """Grade one investigation against its case (``None``: no matching check failed)."""
    if outcome is None:
        return Result(scenario.name, occurrence, expected(scenario), False, "", False, False,
                      0.0, 0.0, 0, False, "no matching check failed")  # fmt: skip
    v = outcome.verdict
    top = v.ranked[0][0] if v.ranked else None
    cause = scenario.expect.root_cause
    right = bool(
        top is not None
        and cause is not None
        and _matches(top.cause, cause.dataset)
        and (cause.column is None or (top.column or "").lower() == cause.column.lower())
    )
    return Result(
        case=scenario.name,
        occurrence=occurrence,
        expected=expected(scenario),
        fired=True,
        top=f"{_describe(top.cause, top.column)} ({top.failure_class})" if top else "",
        top_right=right,
        concluded=v.concluded,
        confidence=round(v.confidence, 4),
        seconds=round(outcome.seconds, 1),
        reads=v.reads,
        memory_used=v.memory_used,
        headline=v.headline(),
        recalled=bool(top is not None and top.from_memory),
    )


def graded(scenario: Scenario, outcome: Outcome) -> str:
    """'correct', 'wrong', or 'not graded' (an incident on a dataset the case does not name)."""
    named = scenario.symptom and not scenario.expect.abstain
    if named and not _matches(outcome.symptom, scenario.symptom):
        return "not graded"
    return "correct" if result(scenario, 1, outcome).correct else "wrong"


# -- live ---------------------------------------------------------------------------------------
def _fires(
    trigger: Trigger | None, symptom: str | None, run: AssertionRun, info: dict[str, Any]
) -> bool:
    dataset = (trigger.dataset if trigger else None) or symptom
    if dataset and not _matches(run.asserted_urn, dataset):
        return False
    check = trigger.check.lower() if trigger and trigger.check else None
    if not check:
        return True
    props = assertion_properties(info)
    if str(props.get("upstream_monitor", "")).lower() == check:
        return True
    unique_id = str(props.get("dbt_unique_id", "")).lower()
    return check in unique_id or check in assertion_label(info).lower()


def failing_check(settings: Settings, scenario: Scenario) -> str | None:
    """The incident key of the first failing assertion the case's trigger names, keyed as the
    sensor keys it (what the sensor would open). When the trigger's check never ran because
    dbt skipped everything below a failing test, the failing check nearest above it opens the
    incident instead: that is the one a person is paged for."""
    with connected(Target.of(settings)) as graph:
        failing = [r for r in graph.assertion_runs() if r.result in ("FAILURE", "ERROR")]
        infos = graph.get_aspects(sorted({r.assertion_urn for r in failing}), ["assertionInfo"])
        for run in failing:  # oldest first: the check nearest the fault fails first
            info = infos.get(run.assertion_urn, {}).get("assertionInfo") or {}
            if _fires(scenario.trigger, scenario.symptom, run, info):
                return incident_key(run, check_name(info))
        dataset = (scenario.trigger.dataset if scenario.trigger else None) or scenario.symptom
        if not dataset or not failing:
            return None
        above = _upstream_of(graph, dataset)
    for run in failing:
        if relation_of(run.asserted_urn) in above:
            info = infos.get(run.assertion_urn, {}).get("assertionInfo") or {}
            return incident_key(run, check_name(info))
    return None


def _upstream_of(graph: Any, dataset: str) -> set[str]:
    """The relations upstream of ``dataset`` in DataHub's lineage (schema.table)."""
    ups: dict[str, set[str]] = {}
    for e in graph.lineage_edges():
        ups.setdefault(relation_of(e.downstream), set()).add(relation_of(e.upstream))
    target = ".".join(dataset.lower().split(".")[-2:])
    return reachable(target, ups) - {target}


def launch(settings: Settings, key: str) -> Outcome:
    """Launch the reliability job for one incident key, as the sensor's run request would."""
    started = time.monotonic()
    verdict = runs.investigate(settings, key).verdict
    seconds = time.monotonic() - started
    record = records.load(records.record_path(settings.state_dir, key))
    return Outcome("", 0, key, verdict.symptom, verdict, seconds, record)


def investigate_failing(settings: Settings) -> list[Outcome]:
    """Every assertion failing now (one per dataset), each through the reliability job."""
    with connected(Target.of(settings)) as graph:
        keys = list(named(graph, failing_now(graph)))
    return [launch(settings, key) for key in keys]


def approve(settings: Settings, outcome: Outcome, reviewer: str) -> runs.IncidentFixed:
    """The incident's fix approved: applied, rebuilt, resolved (three runs, in turn)."""
    return runs.approve_incident(settings, outcome.key, outcome.verdict.digest, reviewer)


def run_case(settings: Settings, scenario: Scenario, reviewer: str) -> list[Outcome | None]:
    """Every occurrence of a case, live: one outcome each (None when no matching check failed)."""
    outcomes: list[Outcome | None] = []
    occurrences = scenario.occurrences
    for n, occ in enumerate(occurrences, start=1):
        if n > 1 and occ.faults == occurrences[0].faults:
            # The same faults again need a clean estate to break: `upstream heal`, which
            # rebuilds what the fault and the fix changed and reloads a reshaped seed.
            healing.heal(settings)
        break_estate(settings, occ)
        key = failing_check(settings, occ)
        outcome = None
        if key is not None:
            outcome = replace(launch(settings, key), scenario=occ.name, occurrence=n)
            if n < len(occurrences) and outcome.verdict.concluded:
                approve(settings, outcome, reviewer)  # the resolution before the recurrence
        outcomes.append(outcome)
    return outcomes


def run_scenario(settings: Settings, scenario: Scenario, reviewer: str) -> list[Outcome]:
    """Every occurrence's graded outcome (the CLI's and the tests' entry)."""
    scenario = scenario.named_as_in_datahub(renamed_at(settings.dbt_manifest))
    return [o for o in run_case(settings, scenario, reviewer) if o is not None]


# -- records and replay -------------------------------------------------------------------------
def case_record(scenario: Scenario, outcomes: list[Outcome | None]) -> dict[str, Any]:
    return {
        "case": scenario.name,
        "occurrences": [
            {
                "occurrence": n,
                "fired": o is not None,
                "seconds": round(o.seconds, 1) if o else 0,
                "investigation": o.record if o else None,
            }
            for n, o in enumerate(outcomes, start=1)
        ],
    }


def replay_case(scenario: Scenario, record: dict[str, Any], spec: EstateSpec) -> list[Result]:
    """Recompute each occurrence's verdict from the recorded reads, and grade it."""
    occurrences = scenario.occurrences
    if len(record.get("occurrences", [])) != len(occurrences):
        raise UpstreamError(
            f"the record of {scenario.name} has {len(record.get('occurrences', []))} "
            f"occurrence(s), the case {len(occurrences)}",
            "the case changed since it was recorded: run it live with `upstream eval`",
        )
    out = []
    for n, (occ, rec) in enumerate(zip(occurrences, record["occurrences"], strict=True), 1):
        if not rec["fired"]:
            out.append(result(occ, n, None))
            continue
        v = replay(rec["investigation"], spec)
        outcome = Outcome(occ.name, n, v.key, v.symptom, v, float(rec["seconds"]))
        out.append(result(occ, n, outcome))
    return out


# -- the suite, on fresh copies of the built estate ---------------------------------------------
def _worker(
    scenario_json: str, base_state: str, work: str, env: dict[str, str]
) -> tuple[list[dict[str, Any]], Any]:
    """One case on its own copy of the estate (runs in a worker process)."""
    os.environ.update(env)
    scenario = Scenario.model_validate_json(scenario_json)
    state = Path(work) / scenario.name
    shutil.rmtree(state, ignore_errors=True)
    shutil.copytree(
        base_state,
        state,
        ignore=shutil.ignore_patterns("dagster_home", "sandboxes", "records", "bench"),
    )
    os.environ["UPSTREAM_STATE_DIR"] = str(state)
    os.environ["UPSTREAM_CLOCK"] = os.environ.get("UPSTREAM_CLOCK", EVAL_CLOCK)
    os.environ[runs.EPHEMERAL_ENV] = "1"
    try:
        settings = settings_mod.load()
        scenario = scenario.named_as_in_datahub(renamed_at(settings.dbt_manifest))
        outcomes = run_case(settings, scenario, "alice")
        results = [result(occ, n, o) for n, (occ, o) in
                   enumerate(zip(scenario.occurrences, outcomes, strict=True), 1)]  # fmt: skip
        return [asdict(r) for r in results], case_record(scenario, outcomes)
    finally:
        shutil.rmtree(state, ignore_errors=True)


def run_suite(
    cases: list[Scenario],
    base_state: Path,
    jobs: int,
    on_done: Callable[[Scenario, list[Result], dict[str, Any] | None, str], None],
    env: dict[str, str] | None = None,
    worker: Callable[..., tuple[list[dict[str, Any]], dict[str, Any]]] | None = None,
) -> None:
    """Run cases on fresh copies of ``base_state``, ``jobs`` at a time, each in a worker
    process of its own (``env`` selects the estate there): a worker that dies (killed, out of
    memory) fails its own case only, never the cases after it."""
    run = worker or _worker
    with tempfile.TemporaryDirectory(prefix="upstream-eval-") as work:
        ctx = multiprocessing.get_context("spawn")

        def isolated(case: Scenario) -> tuple[list[dict[str, Any]], dict[str, Any]]:
            with ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
                job = pool.submit(run, case.model_dump_json(), str(base_state), work, env or {})
                return job.result()

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as threads:
            # Longest first (a recurrence breaks the estate three times), so no worker is left
            # with a long case at the end while the other idles.
            ordered = sorted(cases, key=lambda c: -len(c.occurrences))
            futures = {threads.submit(isolated, c): c for c in ordered}
            for future in as_completed(futures):
                case = futures[future]
                try:
                    rows, record = future.result()
                except Exception as exc:  # noqa: BLE001 - one broken case must not hide the rest
                    on_done(case, [], None, f"{type(exc).__name__}: {exc}")
                    continue
                on_done(case, [Result(**r) for r in rows], record, "")


def load_cases(paths: Iterable[Path]) -> list[Scenario]:
    return [load_scenario(p) for p in paths]


def base_stamp(settings: Settings) -> str:
    """What a clean base was built for: the clock and the estate (a base built for another
    estate under the same folder is built again, never reused)."""
    clock = os.environ.get("UPSTREAM_CLOCK", EVAL_CLOCK)
    return "\n".join([clock, *(f"{k}={v}" for k, v in sorted(estate_env(settings).items()))])


def eval_base(settings: Settings) -> Path:
    """The clean estate every live case copies: built once on the pinned eval clock, in
    ``.upstream/eval-base`` (the demo's own state is left alone)."""
    base = settings.state_dir / "eval-base"
    stamp = base / "eval-clock"
    clock = os.environ.get("UPSTREAM_CLOCK", EVAL_CLOCK)
    chosen = estate_env(settings)  # the estate a case names, not only the configured one
    built_for = base_stamp(settings)
    if (base / "warehouse.duckdb").exists() and stamp.exists() and stamp.read_text() == built_for:
        return base
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    env = {**os.environ, **chosen, "UPSTREAM_STATE_DIR": str(base), "UPSTREAM_CLOCK": clock}
    # in a process of its own: the build's clock and state folder are the evaluation's
    done = subprocess.run(
        [sys.executable, "-m", "upstream_dagster.evaluation.base"],
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise UpstreamError(
            "building the clean estate for the evaluation failed: " + " | ".join(tail),
            "run `make demo` to see the build's own error",
        )
    shutil.rmtree(base / "dagster_home", ignore_errors=True)
    with connected(Target.of(replace(settings, state_dir=base))) as graph:
        failing = failing_now(graph)
    if failing:
        shutil.rmtree(base, ignore_errors=True)
        raise UpstreamError(
            "the clean estate already fails "
            + ", ".join(f"{r.assertion_urn} on {relation_of(r.asserted_urn)}" for r in failing[:3])
            + ": every case would be graded against that failure",
            "fix the estate (its data, its models or its estate.yaml monitors) so that a clean "
            "build passes every check",
        )
    stamp.write_text(built_for)
    return base
