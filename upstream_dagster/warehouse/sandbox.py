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
    ran: bool
    passed: bool
    message: str
    seconds: float = 0.0


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


def simulate(
    project: DbtProject, remedy: Remedy, recheck: Callable[[DbtProject], tuple[bool, str]]
) -> Simulation:
    """Apply ``remedy`` in a sandbox and re-run the failing check there via ``recheck``."""
    if remedy.action not in ("patch", "rerun") or not remedy.rebuild:
        return Simulation(False, False, f"no simulation for a {remedy.action}: nothing to rebuild")
    started = time.monotonic()
    root = project.project_dir.parent / "sandboxes"
    root.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="sim-", dir=root))
    try:
        box = DbtProject(project.source, folder / "dbt_project", folder / "warehouse.duckdb")
        shutil.copytree(
            project.project_dir,
            box.project_dir,
            ignore=shutil.ignore_patterns("logs", "run_results.json", "catalog.json"),
        )
        shutil.copy2(project.warehouse, box.warehouse)
        if remedy.diff:
            problem = apply_patch(box.project_dir, remedy.diff)
            if problem:
                return Simulation(True, False, f"the patch does not apply: {problem}")
        done = box.run("build", "--select", *remedy.rebuild)
        if done.returncode != 0 and not (box.project_dir / "target/run_results.json").exists():
            tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
            return Simulation(True, False, "dbt failed in the sandbox: " + " | ".join(tail))
        passed, message = recheck(box)
        return Simulation(True, passed, message, round(time.monotonic() - started, 1))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
