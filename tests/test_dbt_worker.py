"""dbt commands run by one long-lived dbt process answer as the dbt CLI would: the same exit
code and output for a success, a failing model and a project dbt cannot read; the warehouse is
free for other processes after each command; a worker that dies is replaced."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import duckdb
import pytest

from upstream_dagster.warehouse import dbt_worker
from upstream_dagster.warehouse.dbt_project import DbtProject, dbt_executable

PROFILE = "p:\n  target: dev\n  outputs:\n    dev:\n      type: duckdb\n      path: w.duckdb\n"


@pytest.fixture
def project(tmp_path: Path) -> DbtProject:
    (tmp_path / "dbt_project.yml").write_text("name: p\nprofile: p\nversion: '1.0'\n")
    (tmp_path / "profiles.yml").write_text(PROFILE)
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "a.sql").write_text("select 1 as x")
    (tmp_path / "models" / "a.yml").write_text(
        "models:\n  - name: a\n    columns:\n      - name: x\n        data_tests: [not_null]\n"
    )
    return DbtProject(tmp_path, tmp_path, tmp_path / "w.duckdb")


def _cli(project: DbtProject, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [dbt_executable(), *args, "--project-dir", str(project.project_dir)]
    cmd += ["--profiles-dir", str(project.project_dir)]
    return subprocess.run(
        cmd, cwd=project.project_dir, env=project.env(), capture_output=True, text=True
    )


def _last(output: str) -> str:
    lines = [line for line in output.splitlines() if "Done." in line or "Error" in line]
    return lines[-1].split("  ", 1)[-1] if lines else ""


@pytest.mark.slow
def test_the_worker_answers_as_the_cli_and_frees_the_warehouse(project: DbtProject) -> None:
    built = project.run("build")
    assert built.returncode == 0 and "PASS=2" in built.stdout, built.stdout
    with duckdb.connect(str(project.warehouse)) as con:  # no lock left behind
        assert con.execute("select x from a").fetchone() == (1,)
    cli = _cli(project, "build")
    assert cli.returncode == 0 and _last(cli.stdout) == _last(built.stdout)

    (project.project_dir / "models" / "a.sql").write_text("select * from no_such_table")
    failed = project.run("build")
    cli = _cli(project, "build")
    assert failed.returncode == cli.returncode == 1
    assert "no_such_table" in failed.stdout and _last(cli.stdout) == _last(failed.stdout)

    (project.project_dir / "dbt_project.yml").write_text("name: [unclosed\n")
    broken = project.run("build")
    cli = _cli(project, "build")
    assert broken.returncode == cli.returncode == 2
    assert "Syntax error near line 2" in broken.stdout and "Syntax error near line 2" in cli.stdout


@pytest.mark.slow
def test_a_worker_that_dies_is_replaced(project: DbtProject) -> None:
    assert project.run("parse").returncode == 0
    worker = dbt_worker._worker
    assert worker is not None and worker.proc.poll() is None
    os.kill(worker.proc.pid, signal.SIGKILL)
    worker.proc.wait()
    again = project.run("build")
    assert again.returncode == 0, again.stdout
    assert dbt_worker._worker is not None and dbt_worker._worker.proc.pid != worker.proc.pid


@pytest.mark.slow
def test_a_model_that_prints_bytes_that_are_not_utf8_is_still_answered(
    project: DbtProject,
) -> None:
    """Found by blind cases: a Python model printing invalid UTF-8 made the CLI's output
    undecodable, and the dbt call raised instead of answering (the worker and the CLI both)."""
    (project.project_dir / "models" / "b.py").write_text(
        "import sys\n\n\ndef model(dbt, session):\n"
        "    sys.stdout.buffer.write(b'\\xff\\xfe not utf-8\\n')\n"
        "    sys.stdout.flush()\n"
        "    return session.sql('select 2 as y')\n"
    )
    done = project.run("build")
    assert done.returncode == 0 and "PASS=3" in done.stdout, done.stdout
    assert "\ufffd" in done.stdout  # the bytes kept, replaced, not a crash
    if dbt_worker._worker is not None:  # the CLI path next, as when no worker can start
        dbt_worker._worker.close()
        dbt_worker._worker = None
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dbt_worker, "_Worker", _Refused)
        cli = project.run("build")
    assert cli.returncode == 0 and "\ufffd" in cli.stdout


class _Refused:
    def __init__(self) -> None:
        raise OSError("no worker: the CLI answers")
