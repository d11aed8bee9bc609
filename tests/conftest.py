"""Shared fixtures: the demo estate is built once per session (dbt build + DataHub ingestion on
the real parts) and each test that changes it gets a file copy of the state folder."""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from upstream_dagster import settings as settings_mod

PINNED_CLOCK = "2026-11-29T06:00:00Z"
ROOT = Path(__file__).resolve().parent.parent


ESTATE_FIXTURES = {"built_estate", "estate", "shared_estate"}
# a PostgreSQL cluster started; the showcase datapack loaded into DataHub Lite
SLOW_FIXTURES = {"postgres", "showcase_state"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that need the demo estate built (dbt build + ingestion) are marked `estate`, and
    those on another heavy fixture `slow`, so the inner loop (`make test-fast`) can leave them
    out; `make test` runs everything."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        # a parameter that shares a fixture's name (`estate`: an estate file) is no fixture
        params = set(callspec.params) if callspec is not None else set()
        fixtures = set(getattr(item, "fixturenames", ())) - params
        if ESTATE_FIXTURES & fixtures:
            item.add_marker(pytest.mark.estate)
        on_postgres = callspec is not None and "postgres" in callspec.id.split("-")
        if SLOW_FIXTURES & fixtures or on_postgres:  # a store fixture's PostgreSQL variant
            item.add_marker(pytest.mark.slow)
    # Tests that need the estate go last (stable otherwise): under `pytest -n` the workers run
    # the others while the estate is built (`pytest_collection_finish`).
    items.sort(key=lambda item: item.get_closest_marker("estate") is not None)


def _env(state: Path) -> dict[str, str]:
    return {
        "UPSTREAM_STATE_DIR": str(state),
        "UPSTREAM_CLOCK": PINNED_CLOCK,
        "UPSTREAM_PROJECT_ROOT": str(ROOT),
    }


GMS_ENV = ("DATAHUB_GMS_URL", "DATAHUB_GMS_TOKEN")


@pytest.fixture(autouse=True)
def _no_gms(monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests choose their backend explicitly; a developer's GMS must never be written to.
    for key in GMS_ENV:
        monkeypatch.delenv(key, raising=False)


def _build(state: Path) -> None:
    """The demo estate built and ingested into ``state`` by the estate_build job."""
    from upstream_dagster.runs import run_job
    from upstream_dagster.warehouse.dbt_project import DbtProject

    with pytest.MonkeyPatch.context() as env:  # the session's environment, restored after
        for key, value in _env(state).items():
            env.setenv(key, value)
        settings = settings_mod.load()
        project = DbtProject.of(settings)
        project.deploy()
        project.parse()
        run_job(settings, "estate_build")


def _shared(base: Path) -> Path:
    """Where the workers of one `pytest -n` run share the built estate (the run's temp root)."""
    shared = base / "built-estate"
    shared.mkdir(exist_ok=True)
    return shared


def build_shared(shared: Path) -> None:
    """Build the estate into ``shared/state`` once, under the file lock, unless it is built.
    The lock is released when its holder exits, even killed; a build that died part-way is
    started again."""
    with (shared / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (shared / "built").exists():
            shutil.rmtree(shared / "state", ignore_errors=True)
            _build(shared / "state")
            (shared / "built").touch()


_builder: subprocess.Popen[bytes] | None = None


def pytest_collection_finish(session: pytest.Session) -> None:
    """Under `pytest -n`, the first worker whose tests need the estate starts its build in a
    process of its own, at once: the workers run the tests that need no estate meanwhile
    instead of waiting on the lock when their first estate test comes (each worker still
    takes the lock in `built_estate`, so a build that failed here is done again there)."""
    global _builder
    config = session.config
    if not hasattr(config, "workerinput") or not any(
        item.get_closest_marker("estate") for item in session.items
    ):
        return
    base = Path(config._tmp_path_factory.getbasetemp()).parent  # type: ignore[attr-defined]
    shared = _shared(base)
    with (shared / "starter").open("a") as starter:
        try:
            fcntl.flock(starter, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # another worker is starting it
        if (shared / "started").exists():
            return
        (shared / "started").touch()
    with (shared / "builder.log").open("wb") as log:
        _builder = subprocess.Popen(
            [sys.executable, "-m", "tests.conftest", str(shared)],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            # as every test: a developer's GMS is never written to
            env={k: v for k, v in os.environ.items() if k not in GMS_ENV},
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )


def pytest_sessionfinish(session: pytest.Session) -> None:
    if _builder is not None and _builder.poll() is None:  # the run was stopped early
        _builder.terminate()
        _builder.wait(timeout=60)


@pytest.fixture(scope="session")
def built_estate(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """A state folder holding the demo estate built and ingested by the estate_build job.

    Under `pytest -n` (make test) it is built once, in the run's shared temporary folder
    (started early by `pytest_collection_finish`); each worker then works on a copy of its
    own, so no two processes ever write one Dagster home, warehouse or DataHub Lite file."""
    state = tmp_path_factory.mktemp("estate") / "state"
    if worker_id == "master":  # not distributed
        _build(state)
        return state
    shared = _shared(tmp_path_factory.getbasetemp().parent)
    build_shared(shared)
    shutil.copytree(shared / "state", state)
    return state


@contextmanager
def estate_copy(built_estate: Path, state: Path) -> Iterator[settings_mod.Settings]:
    """A private copy of the built estate at ``state``, the environment pointed at it (and
    restored after); the holder may change it freely."""
    shutil.copytree(built_estate, state, ignore=shutil.ignore_patterns("dagster_home"))
    with pytest.MonkeyPatch.context() as env:
        for key, value in _env(state).items():
            env.setenv(key, value)
        yield settings_mod.load()


@pytest.fixture
def estate(built_estate: Path, tmp_path: Path) -> Iterator[settings_mod.Settings]:
    """A private copy of the built estate; the test may change it freely."""
    with estate_copy(built_estate, tmp_path / "state") as settings:
        yield settings


@pytest.fixture
def shared_estate(built_estate: Path, monkeypatch: pytest.MonkeyPatch) -> settings_mod.Settings:
    """The session's estate, read-only: for tests that only read DataHub."""
    for key, value in _env(built_estate).items():
        monkeypatch.setenv(key, value)
    return settings_mod.load()


@pytest.fixture(scope="session")
def postgres() -> Iterator[int]:
    """A throwaway PostgreSQL cluster on 127.0.0.1 for the session (Debian's postgresql)."""
    from upstream_dagster.evaluation.bench import pg

    if pg.bin_dir() is None:
        raise AssertionError(
            "PostgreSQL's server is missing: `.ci/run` installs Debian's postgresql package"
        )
    with pg.server() as port:
        yield port


def postgres_url(port: int) -> str:
    from upstream_dagster.evaluation.bench import pg

    return pg.url(port)


def fresh_database(port: int) -> str:
    from upstream_dagster.evaluation.bench import pg

    return pg.fresh_database(port)


if __name__ == "__main__":  # the early build `pytest_collection_finish` starts
    build_shared(Path(sys.argv[1]))
