"""Each way the foundation can fail ends in one message that names the cause and the fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from upstream_dagster.datahub.lite import LiteGraph
from upstream_dagster.errors import DataHubUnavailable, UpstreamError
from upstream_dagster.runs import run_job
from upstream_dagster.settings import Settings

ROOT = Path(__file__).resolve().parent.parent


def upstream(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "upstream_dagster.cli", *args],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_missing_lite_file_says_to_run_make_demo(tmp_path: Path) -> None:
    with pytest.raises(DataHubUnavailable) as err:
        LiteGraph(tmp_path / "nope.sqlite")
    assert "does not exist" in err.value.problem and "make demo" in err.value.fix
    done = upstream("summary", env={"UPSTREAM_STATE_DIR": str(tmp_path)})
    assert done.returncode == 1
    assert "does not exist" in done.stderr and "make demo" in done.stderr
    assert "Traceback" not in done.stderr
    # a plan (a read), and the commands that run a job on DataHub, say the same once, with the
    # one fix, before any run is made (no Dagster instance is left in the empty folder)
    for args in (["plan"], ["plan", "--record"], ["reset", "--yes"]):
        said = upstream(*args, env={"UPSTREAM_STATE_DIR": str(tmp_path)})
        assert said.returncode == 1, args
        assert "does not exist" in said.stderr and "make demo" in said.stderr
        assert "Stack Trace" not in said.stderr and "STEP_FAILURE" not in said.stderr
        assert said.stderr.count("does not exist") == 1 and said.stderr.count("fix:") == 1
    assert not (tmp_path / "dagster_home").exists()


@pytest.mark.slow
def test_corrupt_lite_file_names_the_file_and_how_to_rebuild(tmp_path: Path) -> None:
    bad = tmp_path / "datahub-lite.sqlite"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(DataHubUnavailable) as err:
        LiteGraph(bad)
    assert str(bad) in err.value.problem and "make demo" in err.value.fix
    done = upstream("summary", env={"UPSTREAM_STATE_DIR": str(tmp_path)})
    assert done.returncode == 1 and "not a readable DataHub Lite database" in done.stderr


@pytest.mark.slow
def test_unreachable_gms_names_the_url_and_the_settings(tmp_path: Path) -> None:
    url = "http://127.0.0.1:9"  # the discard port: nothing listens there
    done = upstream("summary", env={"UPSTREAM_STATE_DIR": str(tmp_path), "DATAHUB_GMS_URL": url})
    assert done.returncode == 1, done.stdout
    assert url in done.stderr and "DATAHUB_GMS_URL" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_a_password_inside_the_gms_url_is_never_printed(tmp_path: Path) -> None:
    url = "http://upstream:s3cret-pw@127.0.0.1:9"
    done = upstream("summary", env={"UPSTREAM_STATE_DIR": str(tmp_path), "DATAHUB_GMS_URL": url})
    assert done.returncode == 1
    assert "s3cret-pw" not in done.stderr + done.stdout
    assert "http://upstream:***@127.0.0.1:9" in done.stderr  # still says where it tried


def test_failing_dbt_build_names_the_model_and_the_fix(estate: Settings) -> None:
    broken = estate.dbt_project_dir / "models" / "marts" / "fct_broken.sql"
    broken.write_text("select no_such_column from {{ ref('stg_orders') }}\n")
    with pytest.raises(UpstreamError) as err:
        run_job(estate, "estate_refresh")
    assert "fct_broken" in err.value.problem and "no_such_column" in err.value.problem
    assert "could not build 1 model" in err.value.problem
    assert "fix the model SQL" in err.value.problem or "models" in err.value.fix
    # the build failed loudly, and DataHub was told all the same: a failing build check with
    # dbt's own error on the model, which the failed_builds sensor turns into an incident
    from upstream_dagster.datahub import open_graph
    from upstream_dagster.datahub.incidents import failed_build_runs

    graph = open_graph(estate)
    try:
        (failed,) = failed_build_runs(graph)
    finally:
        graph.close()
    assert failed.asserted_urn.endswith("marts.fct_broken,PROD)")
    assert "no_such_column" in dict(failed.native)["message"]


def _fails_in_a_worker(n: int) -> int:
    if n == 1:
        raise UpstreamError("the case broke in its worker", "read the case's own error")
    return n


@pytest.mark.slow
def test_an_error_in_one_worker_comes_back_whole_and_spares_the_case_beside_it() -> None:
    """`upstream eval` runs cases in worker processes: an UpstreamError raised in one must come
    back as itself (problem and fix) without breaking the pool for the others."""
    import multiprocessing
    import pickle
    from concurrent.futures import ProcessPoolExecutor

    again = pickle.loads(pickle.dumps(UpstreamError("p", "f")))
    assert (type(again), again.problem, again.fix) == (UpstreamError, "p", "f")
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
        broken, fine = pool.submit(_fails_in_a_worker, 1), pool.submit(_fails_in_a_worker, 2)
        with pytest.raises(UpstreamError, match="broke in its worker") as raised:
            broken.result(timeout=900)  # a limit on a hang: a spawned worker starts slowly
        assert raised.value.fix == "read the case's own error"
        assert fine.result(timeout=900) == 2
