"""Verify a fix before believing it: a throwaway copy of the deployed dbt project and the
warehouse, the patch applied there, the affected models rebuilt, the failing check re-run.
Nothing outside the sandbox folder is touched.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from upstream_dagster.reliability.remediation import Remedy
from upstream_dagster.warehouse.dbt_project import DbtProject


@dataclass(frozen=True)
class Simulation:
    ran: bool  # the fix was tried
    passed: bool  # the failing check passes with the fix
    message: str
    seconds: float = 0.0
    control_ran: bool = False  # the check was run again without the fix
    control_passed: bool = False  # ... and passed: the fix is not what turns it green
    control_message: str = ""


# Re-runs the failing check in a sandbox; ``fresh`` says nothing was built there yet, so the
# check must run itself (a dbt test, a model's build) rather than read the last build's result.
Recheck = Callable[[DbtProject, bool], tuple[bool, str]]
# A fix that rebuilds: the control rebuilds the same models without it.
REBUILDS = ("patch", "rerun", "revert")


def check_patch(project: Path, diff: str) -> str:
    """`git apply --check` of the diff in ``project``: '' when it applies, else git's message."""
    done = subprocess.run(
        ["git", "apply", "--check", "-"],
        input=diff,
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    return "" if done.returncode == 0 else (done.stderr or done.stdout).strip()


def apply_patch(project: Path, diff: str) -> str:
    problem = check_patch(project, diff)
    if problem:
        return problem
    done = subprocess.run(
        ["git", "apply", "-"], input=diff, cwd=project, capture_output=True, text=True, check=False
    )
    return "" if done.returncode == 0 else (done.stderr or done.stdout).strip()


def _sandbox(project: DbtProject, folder: Path) -> DbtProject:
    box = DbtProject(project.source, folder / "dbt_project", folder / "warehouse.duckdb")
    shutil.copytree(
        project.project_dir,
        box.project_dir,
        ignore=shutil.ignore_patterns("logs", "run_results.json", "catalog.json"),
    )
    shutil.copy2(project.warehouse, box.warehouse)
    return box


def sandbox_copy(project: DbtProject, folder: Path) -> DbtProject:
    """A throwaway copy of the deployed project and its warehouse in ``folder`` (what
    `simulate` tries a fix on, and `upstream detect` breaks)."""
    return _sandbox(project, folder)


def _build(box: DbtProject, selectors: tuple[str, ...]) -> str:
    done = box.run("build", "--select", *selectors)
    if done.returncode != 0 and not (box.project_dir / "target/run_results.json").exists():
        tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
        return "dbt failed in the sandbox: " + " | ".join(tail)
    return ""


def simulate(project: DbtProject, remedy: Remedy, recheck: Recheck) -> Simulation:
    """The failing check, in a sandbox, without the fix and then with it.

    Without it (the control): the same models rebuilt with nothing changed, or, for a fix that
    rebuilds nothing, the check run again on the data as it is. A fix is verified only when the
    check passes with it and fails without it; a check that passes with nothing changed failed
    on data that did not make it fail (flaky)."""
    if not project.warehouse.exists() or not project.project_dir.exists():
        # An estate known only through DataHub (no dbt project or warehouse attached): there
        # is nothing to copy, so neither the fix nor its control can be tried.
        missing = project.warehouse if project.project_dir.exists() else project.project_dir
        return Simulation(False, False, f"no simulation: no warehouse is attached ({missing})")
    started = time.monotonic()
    root = project.project_dir.parent / "sandboxes"
    root.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="sim-", dir=root))
    fixes = remedy.action in REBUILDS and bool(remedy.rebuild)
    try:
        box = _sandbox(project, folder)
        if fixes and remedy.action != "rerun":  # the same rebuild, without the change
            problem = _build(box, remedy.rebuild)
            control = (False, problem) if problem else recheck(box, False)
        else:  # a rerun's control is not rerunning: the check on the data as it stands
            control = recheck(box, True)
        what = "without the fix" if fixes else "again on the same data"
        control_message = f"{what}: {control[1]}"
        if not fixes:
            return Simulation(
                False, False, f"no simulation for a {remedy.action}: nothing to rebuild",
                round(time.monotonic() - started, 1), True, control[0], control_message,
            )  # fmt: skip
        if remedy.diff:
            problem = apply_patch(box.project_dir, remedy.diff)
            if problem:
                return Simulation(True, False, f"the patch does not apply: {problem}", 0.0,
                                  True, control[0], control_message)  # fmt: skip
        problem = _build(box, remedy.rebuild)
        passed, message = (False, problem) if problem else recheck(box, False)
        return Simulation(
            True, passed, message, round(time.monotonic() - started, 1),
            True, control[0], control_message,
        )  # fmt: skip
    finally:
        shutil.rmtree(folder, ignore_errors=True)
