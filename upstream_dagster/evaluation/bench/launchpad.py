"""Launchpad configs for the two write-backs, mutated from a valid one.

Dagster validates a launch's run config against the config classes the launchpad shows
(`WritebackConfig` for ``coverage_writeback``, `IncidentApproval` for ``incident_fix``) before
any step runs; a bad one must be refused there, naming the field. The jobs here carry exactly
those classes on ops of the same names, so the schema checked is the launchpad's own. (No
``from __future__ import annotations`` here: Dagster reads the ops' config annotations.)"""

import random
import string
from typing import Any

import dagster as dg

from upstream_dagster.defs.coverage import WritebackConfig
from upstream_dagster.defs.remediation import IncidentApproval

VALID: dict[str, dict[str, Any]] = {
    "coverage_writeback": {"batch_digest": "d1", "approve": ["all"], "reviewer": "alice"},
    "incident_fix": {"verdict_digest": "d1", "reviewer": "alice"},
}
REQUIRED = {
    "coverage_writeback": ("batch_digest", "approve", "reviewer"),
    "incident_fix": ("verdict_digest", "reviewer"),
}


@dg.op(name="coverage_writeback")
def _writeback(config: WritebackConfig) -> None:
    del config


@dg.op(name="incident_fix")
def _fix(config: IncidentApproval) -> None:
    del config


@dg.job(name="coverage_writeback_job")
def _writeback_job() -> None:
    _writeback()


@dg.job(name="incident_writeback_job")
def _fix_job() -> None:
    _fix()


JOBS = {"coverage_writeback": _writeback_job, "incident_fix": _fix_job}


def _ident(rng: random.Random) -> str:
    return rng.choice(string.ascii_lowercase) + "".join(
        rng.choice(string.ascii_lowercase + "_") for _ in range(rng.randrange(2, 10))
    )


def mutation(rng: random.Random) -> tuple[str, str, dict[str, Any]]:
    """(what, the step, a run config) that the launchpad must refuse."""
    step = rng.choice(sorted(VALID))
    config = dict(VALID[step])
    wrong: Any = rng.choice([7, 2.5, ["alice"], {"name": "alice"}, None, True])
    left_out = rng.choice(REQUIRED[step])
    choices: list[tuple[str, dict[str, Any]]] = [
        (
            "a required field left out",
            {k: v for k, v in config.items() if k != left_out},
        ),
        ("a reviewer that is not text", {**config, "reviewer": wrong}),
        ("a digest that is not text", {**config, REQUIRED[step][0]: wrong}),
        ("an unknown field", {**config, _ident(rng): "x"}),
        ("a token pasted into the config", {**config, "gms_token": "eyJhbGciOi" + _ident(rng)}),
    ]
    if step == "coverage_writeback":
        choices.append(("approve as text, not a list", {**config, "approve": "all"}))
        choices.append(("an id that is not text", {**config, "approve": [wrong, "p-1"]}))
    what, body = rng.choice(choices)
    run_config: dict[str, Any] = {"ops": {step: {"config": body}}}
    if rng.random() < 0.15:
        what, run_config = (
            "the config under another step",
            {"ops": {_ident(rng): {"config": config}}},
        )
    return what, step, run_config


def refused(step: str, run_config: dict[str, Any]) -> str:
    """Dagster's first complaint about ``run_config`` ("" when it validates)."""
    try:
        dg.validate_run_config(JOBS[step], run_config)
    except dg.DagsterInvalidConfigError as exc:
        return next((line.strip() for line in str(exc).splitlines() if "Error 1" in line), str(exc))
    return ""
