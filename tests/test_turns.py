"""Commands wait their turn behind a running build (issue 28): `plan` while the daemon rebuilt
the estate left a red, failed `score` run; every step that opens the warehouse now takes the
`warehouse` pool's one slot and waits for it, saying so."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import dagster as dg

from upstream_dagster.defs.instance import WAREHOUSE_POOL, run_instance
from upstream_dagster.runs import HOST_TAG, PID_TAG
from upstream_dagster.settings import Settings

ROOT = Path(__file__).resolve().parent.parent


def test_a_plan_started_during_a_build_waits_for_it_then_plans(estate: Settings) -> None:
    # the instance as a process that starts runs sees it: its pools made (this test claims a
    # slot by hand, where a run's step would first give the pool dagster.yaml's default limit)
    instance = run_instance(estate)
    storage = instance.event_log_storage
    # a build in flight: a run of this host, alive (this test's own process), holding the slot
    build = dg.DagsterRun(
        job_name="estate_refresh",
        run_id=str(uuid.uuid4()),
        status=dg.DagsterRunStatus.STARTED,
        tags={HOST_TAG: socket.gethostname(), PID_TAG: str(os.getpid())},
    )
    instance.add_run(build)
    assert storage.claim_concurrency_slot(WAREHOUSE_POOL, build.run_id, "estate_dbt").is_claimed
    plan = subprocess.Popen(
        [sys.executable, "-m", "upstream_dagster.cli", "plan", "--record", "--short"],
        cwd=ROOT,
        env=dict(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    said: list[str] = []
    try:
        assert plan.stderr is not None
        deadline = time.monotonic() + 600  # only stops a hung test; nothing timed is asserted
        while not any("waits its turn" in line for line in said):
            line = plan.stderr.readline()
            assert line and time.monotonic() < deadline, "".join(said)
            said.append(line)
        assert plan.poll() is None  # waiting, not failed
        assert "step proposals waits its turn" in said[-1] and WAREHOUSE_POOL in said[-1]
        # the build ends: its slot is given back, and the plan goes on
        instance.report_run_failed(build, "the test's stand-in build ended")
        storage.free_concurrency_slots_for_run(build.run_id)
        out, err = plan.communicate(timeout=900)
    finally:
        if plan.poll() is None:
            plan.kill()
            plan.wait()
    assert plan.returncode == 0, "".join(said) + err
    assert out.startswith("batch ") and "done: scoring and planning" in err
    failed = instance.get_run_records(
        dg.RunsFilter(job_name="score", statuses=[dg.DagsterRunStatus.FAILURE])
    )
    assert not failed  # no red score run left behind


def test_a_plan_read_during_a_build_waits_for_the_warehouse_then_shows_what_a_run_records(
    estate: Settings,
) -> None:
    """`upstream plan` plans without a run. While a build holds the warehouse file (DuckDB's
    write lock) it waits, saying so, instead of failing; then it prints the batch the score job
    records: the same digest, proposals and violations, only the approval line differs."""
    import duckdb

    def plan(*args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "upstream_dagster.cli", "plan", *args],
            cwd=ROOT, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip

    build = duckdb.connect(str(estate.warehouse))  # read-write: the lock a build holds
    read = plan()
    try:
        assert read.stderr is not None
        said = read.stderr.readline()  # only a hung test stops here: nothing timed is asserted
        assert "waiting for the warehouse: another process holds it" in said, said
        assert read.poll() is None  # waiting, not failed
    finally:
        build.close()
    out, err = read.communicate(timeout=900)
    assert read.returncode == 0, said + err
    runs = run_instance(estate).get_run_records(dg.RunsFilter(job_name="score"))
    recorded = plan("--record")
    again, _ = recorded.communicate(timeout=900)
    assert recorded.returncode == 0
    assert (
        len(run_instance(estate).get_run_records(dg.RunsFilter(job_name="score"))) == len(runs) + 1
    )

    def body(text: str) -> list[str]:
        return [line for line in text.splitlines() if not line.startswith(("  (", "planned "))]

    assert out.startswith("batch ") and body(out) == body(again)
    assert "`upstream plan --record` puts this batch on the proposals asset" in out
    assert "nonce " in again and "nonce " not in out
