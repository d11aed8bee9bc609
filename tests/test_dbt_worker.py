"""dbt commands run by one long-lived dbt process answer as the dbt CLI would: the same exit
code and output for a success, a failing model and a project dbt cannot read; the warehouse is
free for other processes after each command; a worker that dies is replaced."""

from __future__ import annotations

import errno
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import duckdb
import pytest
from dagster_dbt.core.dbt_cli_event import DbtCliEventMessage

from upstream_dagster.defs.dbt_resource import DeployedDbt
from upstream_dagster.settings import Settings
from upstream_dagster.warehouse import dbt_worker
from upstream_dagster.warehouse.dbt_project import DbtProject, build_executable, dbt_executable

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
    assert dbt_worker._worker is not None
    serving = dbt_worker._worker.proc.pid
    with duckdb.connect(str(project.warehouse)) as con:  # no lock left behind
        assert con.execute("select x from a").fetchone() == (1,)
    cli = _cli(project, "build")
    assert cli.returncode == 0 and _last(cli.stdout) == _last(built.stdout)

    (project.project_dir / "models" / "a.sql").write_text("select * from no_such_table")
    failed = project.run("build")
    cli = _cli(project, "build")
    assert failed.returncode == cli.returncode == 1
    assert dbt_worker._worker.proc.pid == serving  # a model that failed: the worker stays
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


MODELS = 12
SLOW = (  # a while compiling (the sandbox's longest range is 100,000), then a query
    "{% if execute %}{% for _ in range(1000) %}{% for _ in range(1000) %}{% endfor %}"
    "{% endfor %}{% do run_query('select 1') %}{% endif %}"
)


def _projects(tmp_path: Path) -> tuple[DbtProject, DbtProject]:
    """Two projects whose profiles name their warehouse by the same relative path (as every
    deployed copy and sandbox does): only the working directory tells them apart."""
    made = []
    for name in ("first", "second"):
        models = tmp_path / name / "models"
        models.mkdir(parents=True)
        (models.parent / "dbt_project.yml").write_text(
            f"name: {name}\nprofile: p\nversion: '1.0'\n"
        )
        (models.parent / "profiles.yml").write_text(PROFILE + "      threads: 4\n")
        # dbt starts the models ready by name: "a_" first, the slow ones while it fails
        (models / f"a_{name}_early.sql").write_text("select 1 as x")
        (models / f"{name}_later.sql").write_text(f"select * from {{{{ ref('a_{name}_early') }}}}")
        for i in range(MODELS):
            (models / f"{name}_{i:02}.sql").write_text(f"{SLOW}select 1 as x")
        made.append(DbtProject(models.parent, models.parent, models.parent / "w.duckdb"))
    return made[0], made[1]


def _tables(warehouse: Path) -> set[str]:
    with duckdb.connect(str(warehouse)) as con:
        return {
            row[0]
            for row in con.execute("select table_name from information_schema.tables").fetchall()
        }


@pytest.mark.slow
def test_a_command_dbt_could_not_finish_is_the_last_its_worker_runs(tmp_path: Path) -> None:
    """dbt stops a command on a compile error while its threads still compile other models;
    they open the warehouse again after the worker released it. The worker that ran it exits
    before it answers (the warehouse is free), the next command gets a new one and writes its
    own project's warehouse."""
    first, second = _projects(tmp_path)
    (first.project_dir / "models" / "a_first_early.sql").write_text("select {{ no_such_macro() }}")
    stopped = first.run("docs", "generate")
    assert stopped.returncode == 2 and "no_such_macro" in stopped.stdout, stopped.stdout
    worker = dbt_worker._worker
    assert worker is None or worker.proc.poll() is not None  # gone, nothing of it left
    assert _tables(first.warehouse) == set()  # free: nothing holds it
    built = second.run("build")
    assert built.returncode == 0, built.stdout
    assert {f"second_{i:02}" for i in range(MODELS)} <= _tables(second.warehouse)
    assert _tables(first.warehouse) == set()


def test_after_a_copy_dbt_could_not_compile_the_next_copy_catalogs_its_own_warehouse(
    estate: Settings, tmp_path: Path
) -> None:
    """Seen in a test run: after a sandbox copy's `docs generate` stopped on a compile error,
    the next copy's catalog (what the ingestion gives DataHub) described the first copy's
    warehouse: a column renamed in the second was still listed by its old name."""
    first = DbtProject.of(estate)
    copy = tmp_path / "copy"
    shutil.copytree(first.project_dir, copy / "dbt_project")
    shutil.copy(first.warehouse, copy / "warehouse.duckdb")
    second = DbtProject(copy / "dbt_project", copy / "dbt_project", copy / "warehouse.duckdb")
    assert first.warehouse_path == second.warehouse_path  # the same relative path
    source = next(s for s in first.manifest()["sources"].values() if s["resource_type"] == "source")
    model = sorted(first.project_dir.glob("models/**/*.sql"))[0]
    model.write_text("select {{ no_such_macro() }}\n")
    assert first.run("docs", "generate").returncode == 2
    table = f'"{source["schema"]}"."{source["identifier"]}"'
    with duckdb.connect(str(second.warehouse)) as con:  # then a column renamed in the second
        column = con.execute(f"select * from {table} limit 0").description[-1][0]
        con.execute(f'alter table {table} rename column "{column}" to "{column}_renamed"')
    assert second.run("docs", "generate").returncode == 0
    catalog = json.loads((second.project_dir / "target" / "catalog.json").read_text())
    columns = catalog["sources"][source["unique_id"]]["columns"]
    assert f"{column}_renamed" in columns and column not in columns


def _deployed(project: DbtProject) -> DeployedDbt:
    """The estate's dbt resource, as the definitions make it (`upstream-dbt` beside dbt)."""
    return DeployedDbt(
        project_dir=str(project.project_dir),
        profiles_dir=str(project.project_dir),
        dbt_executable=build_executable(),
    )


def _pids(events: list[DbtCliEventMessage]) -> set[int]:
    return {e.raw_event["info"]["pid"] for e in events}


@pytest.mark.slow
def test_dagster_dbts_builds_run_in_the_worker_and_answer_as_the_cli(project: DbtProject) -> None:
    """dagster-dbt runs each dbt command as a process of its own; given `upstream-dbt`, the
    command runs in this process's dbt worker (dbt's own log lines carry its pid), with the
    exit code, log lines and artifacts the dbt CLI gives dagster-dbt."""
    assert build_executable() == str(dbt_worker.SHIM)  # installed by `make install`
    assert project.run("parse").returncode == 0
    manifest = json.loads((project.project_dir / "target" / "manifest.json").read_text())
    dbt = _deployed(project)
    with pytest.MonkeyPatch.context() as env:
        for key, value in project.env().items():
            env.setenv(key, value)
        built = dbt.cli(["build"], manifest=manifest, raise_on_error=False)
        events = list(built.stream_raw_events())
        assert built.is_successful() and built.process.returncode == 0
        assert dbt_worker._worker is not None
        assert _pids(events) == {dbt_worker._worker.proc.pid} != {built.process.pid}
        results = json.loads((built.target_path / "run_results.json").read_text())
        assert sorted(r["status"] for r in results["results"]) == ["pass", "success"]

        (project.project_dir / "models" / "a.sql").write_text("select * from no_such_table")
        failed = dbt.cli(["build"], manifest=manifest, raise_on_error=False)
        said = [e.raw_event["info"] for e in failed.stream_raw_events()]
        assert not failed.is_successful() and failed.process.returncode == 1
        assert any("no_such_table" in e["msg"] for e in said if e["level"] == "error")

        # a process the listener did not start asks no worker: it is the dbt CLI itself
        env.setenv(dbt_worker.SHIM_ENV, f"1 {os.environ[dbt_worker.SHIM_ENV].split()[1]}")
        alone = dbt.cli(["build"], manifest=manifest, raise_on_error=False)
        lines = list(alone.stream_raw_events())
        assert alone.process.returncode == 1 and _pids(lines) == {alone.process.pid}


def _held_model(project: DbtProject) -> Path:
    """A model whose query waits, using no CPU, until the test writes to a named pipe it reads
    (a query that computes for seconds took a core from every other test, and had to be long
    enough to still be running when the interrupt arrived)."""
    pipe = project.project_dir / "held.csv"
    os.mkfifo(pipe)
    (project.project_dir / "models" / "long.sql").write_text(
        "{{ config(materialized='table') }}"
        f"select count(*) as c from read_csv('{pipe}', header = true)"
    )
    return pipe


def _reading(pipe: Path, build: subprocess.Popen[bytes]) -> int:
    """The pipe's write end, once DuckDB has it open for reading: the model's query is running
    (opened without a reader, a pipe says ENXIO; the deadline only stops a hung test)."""
    deadline = time.monotonic() + 300
    while True:
        try:
            return os.open(pipe, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as no_reader:
            if no_reader.errno != errno.ENXIO:
                raise
        assert build.poll() is None, "the build ended before its query read the pipe"
        assert time.monotonic() < deadline, "the long model's query never read the pipe"
        time.sleep(0.05)


def _drain(build: subprocess.Popen[bytes], lines: queue.Queue[bytes], output: list[bytes]) -> None:
    for line in build.stdout or ():
        output.append(line)
        lines.put(line)


def _until_line(lines: queue.Queue[bytes], *has: bytes) -> None:
    """Wait for a line of the build's output that holds every one of ``has`` (the deadline only
    stops a hung test)."""
    seen = b""
    while True:
        try:
            line = lines.get(timeout=300)
        except queue.Empty:
            pytest.fail(f"no line with {has} in the build's output: {seen[-3000:]!r}")
        seen += line
        if all(h in line for h in has):
            return


def _long_build(project: DbtProject) -> subprocess.Popen[bytes]:
    """`upstream-dbt build` of the project with the long model, its output piped as JSON."""
    return subprocess.Popen(
        [str(dbt_worker.SHIM), "build"],
        cwd=project.project_dir,
        env={**project.env(), "DBT_LOG_FORMAT": "json"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


@pytest.mark.slow
def test_an_interrupted_build_is_cancelled_in_the_worker_and_the_next_one_runs(
    project: DbtProject,
) -> None:
    """A run terminated in the Dagster UI: dagster-dbt interrupts its dbt process; the worker
    running the command is interrupted as the CLI would be (dbt cancels the model's query), the
    command ends as dbt's does when it could not finish, the worker exits (freeing the
    warehouse), and the next build runs."""
    pipe = _held_model(project)
    dbt_worker.listen()
    # a worker started by a process that ignores SIGINT (`make test` run in the background, or
    # under nohup, as CI may) inherits that; the interrupt the shim forwards must still stop it
    if dbt_worker._worker is not None:
        dbt_worker._worker.close()
        dbt_worker._worker = None
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:  # until the worker is started (when the shim asks for it)
        shim = _long_build(project)
        lines: queue.Queue[bytes] = queue.Queue()  # read as it comes: a full pipe would stall dbt
        output: list[bytes] = []
        reader = threading.Thread(target=_drain, args=(shim, lines, output), daemon=True)
        reader.start()
        held = _reading(pipe, shim)  # the model's query is running, waiting on the pipe
    finally:
        signal.signal(signal.SIGINT, before)
    worker = dbt_worker._worker
    assert worker is not None
    shim.send_signal(signal.SIGINT)
    try:  # dbt cancels the model's query, then waits for it: only then is the query let go
        _until_line(lines, b'"LogCancelLine"', b"model.p.long")
    finally:
        os.write(held, b"c\n1\n")
        os.close(held)
    code = shim.wait(timeout=300)
    reader.join(timeout=60)
    assert code == 2, (worker.proc.pid, b"".join(output)[-3000:])
    assert worker.proc.wait(timeout=60) == 0  # gone, the warehouse with it
    (project.project_dir / "models" / "long.sql").unlink()
    again = project.run("build")
    assert again.returncode == 0 and "PASS=2" in again.stdout, again.stdout
    assert "long" not in again.stdout  # the next build is the project's own, nothing held


def test_a_listener_folder_left_by_a_process_that_is_gone_is_removed() -> None:
    """A process killed (or ended by `os._exit`, as a worker does) never removes its listener
    folder; the next process that listens removes those of processes that are gone."""
    short = Path(tempfile.mkdtemp(prefix="u", dir="/tmp"))  # a socket's path must stay short
    try:
        dead = subprocess.Popen(["true"])
        dead.wait()
        left = short / f"{dbt_worker.LISTENING}{dead.pid}-abc"
        left.mkdir()
        (left / "socket").touch()
        alive = short / f"{dbt_worker.LISTENING}{os.getpid()}-def"
        alive.mkdir()
        listening = subprocess.run(
            [sys.executable, "-c", "from upstream_dagster.warehouse import dbt_worker as w\n"
             "w.listen(); print(w._listening[1])"],
            env={**os.environ, "TMPDIR": str(short)}, capture_output=True, text=True, check=True,
        )  # fmt: skip
        assert not left.exists() and alive.exists()
        own = Path(listening.stdout.strip()).parent
        assert own.parent == short and not own.exists()  # its own, removed as it exited
    finally:
        shutil.rmtree(short, ignore_errors=True)
