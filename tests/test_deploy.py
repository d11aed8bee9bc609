"""The production deployment: docs/deploy/dagster.yaml against Dagster's own config schema, and
its PostgreSQL storage for real, on a PostgreSQL server from Debian's packages that this module
starts on 127.0.0.1 (and stops), with write-backs held to one at a time."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from upstream_dagster.evaluation.bench import pg_writeback

from .conftest import fresh_database

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "docs" / "deploy" / "dagster.yaml"
PG_ENV = {**pg_writeback.PG_ENV, "DAGSTER_PG_DB": "dagster"}


def _validated(home: Path) -> dict[str, Any]:
    """The instance config as Dagster validates it, then each configured class's own config."""
    from dagster._config import process_config
    from dagster._core.instance.config import dagster_instance_config

    config, _ = dagster_instance_config(str(home))
    launcher = config["run_launcher"]
    for module, name, section in (
        (launcher["module"], launcher["class"], launcher["config"]),
        ("dagster_postgres", "DagsterPostgresStorage", config["storage"]["postgres"]),
    ):
        cls = getattr(__import__(module, fromlist=[name]), name)
        result = process_config(cls.config_type(), section)
        assert result.success, f"{name}: {[e.message for e in result.errors or []]}"
    return dict(config)


@pytest.mark.slow
def test_production_dagster_yaml_passes_dagsters_config_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in PG_ENV.items():
        monkeypatch.setenv(key, value)
    shutil.copy(DEPLOY, tmp_path / "dagster.yaml")
    config = _validated(tmp_path)
    assert config["run_launcher"]["class"] == "K8sRunLauncher"
    limits = config["concurrency"]["runs"]["tag_concurrency_limits"]
    assert {"key": "upstream/writeback", "limit": 1} in limits
    assert config["concurrency"]["pools"]["default_limit"] == 1


def test_config_schema_check_catches_a_mistyped_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dagster._core.errors import DagsterInvalidConfigError

    for key, value in PG_ENV.items():
        monkeypatch.setenv(key, value)
    broken = DEPLOY.read_text().replace("tag_concurrency_limits", "tag_concurency_limits")
    (tmp_path / "dagster.yaml").write_text(broken)
    with pytest.raises(DagsterInvalidConfigError):
        _validated(tmp_path)
    launcher = yaml.safe_load(DEPLOY.read_text())
    launcher["run_launcher"]["config"]["env_secret"] = ["typo"]
    (tmp_path / "dagster.yaml").write_text(yaml.safe_dump(launcher))
    with pytest.raises(AssertionError, match="K8sRunLauncher"):
        _validated(tmp_path)


def test_writeback_assets_and_jobs_carry_the_limits_the_deployment_enforces() -> None:
    """The pool and the run tag the deployment limits are the ones the write-backs declare."""
    from upstream_dagster.defs.instance import WRITEBACK_POOL
    from upstream_dagster.defs.resources import WRITEBACK_TAGS

    config = yaml.safe_load(DEPLOY.read_text())
    (limit,) = config["concurrency"]["runs"]["tag_concurrency_limits"]
    assert limit["key"] in WRITEBACK_TAGS
    source = {p.name: p.read_text() for p in (ROOT / "upstream_dagster" / "defs").glob("*.py")} | {
        "definitions.py": (ROOT / "upstream_dagster" / "definitions.py").read_text()
    }
    # the coverage write-back; an incident's fix and its resolution
    assert source["coverage.py"].count("pool=WRITEBACK_POOL") == 1
    assert source["coverage.py"].count("tags=WRITEBACK_TAGS") == 1
    assert source["remediation.py"].count("pool=WRITEBACK_POOL") == 2
    assert source["remediation.py"].count("tags=WRITEBACK_TAGS") == 2
    assert WRITEBACK_POOL == "datahub_writeback"


def pg_home(
    postgres: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: Path | None = None
) -> Path:
    """A DAGSTER_HOME with the deployment's dagster.yaml on a new database of the test's
    PostgreSQL (no Kubernetes here: runs execute in local processes)."""
    from upstream_dagster.evaluation.bench.pg_writeback import deployment_home

    home = home or tmp_path / "dagster_home"
    for key, value in deployment_home(home, postgres, fresh_database(postgres)).items():
        monkeypatch.setenv(key, value)
    return home


@pytest.mark.slow
def test_postgres_instance_holds_write_backs_to_one_at_a_time(
    postgres: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Write-back runs started together from four processes, on the deployment's PostgreSQL
    storage: Upstream's lock, in the gate tables of that same database, holds them to one at a
    time (Dagster's one-slot pool alone let two overlap, about 1 run in 10)."""
    import dagster as dg

    pg_home(postgres, tmp_path, monkeypatch)
    instance = dg.DagsterInstance.get()
    assert type(instance.run_storage).__name__ == "PostgresRunStorage"
    from upstream_dagster.defs.instance import WRITEBACK_POOL

    subprocess.run(
        [str(Path(sys.executable).with_name("dagster")), "instance", "concurrency", "set",
         WRITEBACK_POOL, "1"],
        check=True, cwd=ROOT, capture_output=True, timeout=120,
    )  # fmt: skip
    from upstream_dagster.evaluation.bench.pg_writeback import overlaps, race

    held = race(tmp_path / "held.log", dict(os.environ), workers=4, runs=2, hold=0.5)
    assert len(held) == 8
    assert not overlaps(held), f"two write-backs overlapped: {overlaps(held)}"
    runs = instance.get_run_records(dg.RunsFilter(job_name="writeback_standin"))
    assert len(runs) == 8 and all(r.dagster_run.tags.get("upstream/writeback") for r in runs)
    assert all(r.dagster_run.status == dg.DagsterRunStatus.SUCCESS for r in runs)


def test_datahub_address_and_token_reach_a_run_through_env_vars_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import json

    import dagster as dg

    from upstream_dagster.defs.resources import resources
    from upstream_dagster.settings import load

    from .deploy_jobs import datahub_target

    instance = dg.DagsterInstance.ephemeral()

    def target() -> tuple[str, str]:
        fixed = resources(load())["datahub"]
        result = dg.materialize([datahub_target], resources={"datahub": fixed}, instance=instance)
        return result.output_for_node("datahub_target"), result.run_id

    assert target()[0] == "lite None token=none"
    monkeypatch.setenv("DATAHUB_GMS_URL", "http://gms.internal:8080")
    monkeypatch.setenv("DATAHUB_GMS_TOKEN", "s3cret-token")
    # the resource takes no config at all: nothing to show, nothing a launch can set
    fixed = resources(load())["datahub"]
    assert fixed.config_schema.as_field().config_type.fields == {}  # type: ignore[attr-defined]
    said, run_id = target()
    assert said == "gms http://gms.internal:8080 token=set"
    run = instance.get_run_by_id(run_id)
    assert run is not None
    logged = json.dumps(run.run_config) + " ".join(str(e) for e in instance.all_logs(run_id))
    assert "s3cret-token" not in logged and "gms.internal" not in logged


def test_the_asset_graph_reads_as_a_dagster_user_expects(shared_estate: object) -> None:
    """Every asset has a kind; dbt meta owners and tags are carried over; DataHub is one
    observable source the score reads, downstream of the build that writes it; no launchpad
    default carries a secret."""
    import dagster as dg

    from upstream_dagster.definitions import build
    from upstream_dagster.settings import load

    defs = build(load())
    graph = defs.resolve_asset_graph()
    keys = graph.get_all_asset_keys()
    assert not [k.to_user_string() for k in keys if not graph.get(k).kinds]
    owned = [k for k in keys if graph.get(k).owners]
    assert owned and all(
        o.startswith("team:") or "@" in o for k in owned for o in graph.get(k).owners
    )
    assert any(graph.get(k).tags.get("domain") for k in keys)  # dbt meta domain -> tag
    reads = graph.get(dg.AssetKey("metadata_context")).parent_keys
    assert {dg.AssetKey("datahub"), dg.AssetKey("warehouse_profiles")} <= reads
    assert graph.get(dg.AssetKey("datahub")).is_observable
    for key in ("upstream", "datahub", "warehouse", "dbt", "io_manager", "reviewer_token"):
        fields = defs.resources[key].config_schema.as_field().config_type.fields  # type: ignore[union-attr]
        assert fields == {}, f"a launch could configure {key}: {sorted(fields)}"


@pytest.mark.slow
def test_a_write_back_killed_on_postgres_is_undone_by_reset_from_another_process(
    estate: object, postgres: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The demo estate with its Dagster instance (and so its gate store) on PostgreSQL: an
    approval killed with kill -9 part-way through its writes, then `upstream reset` from another
    process brings DataHub Lite back byte-identical, from the ledger in PostgreSQL."""
    import re
    import signal
    import time

    import psycopg2  # type: ignore[import-untyped]

    from upstream_dagster.settings import load

    from .test_coverage import graph_digest

    settings = load()
    pg_home(postgres, tmp_path, monkeypatch, home=settings.dagster_home)
    url = f"postgresql://dagster@127.0.0.1:{postgres}/{os.environ['DAGSTER_PG_DB']}"

    def cli(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "upstream_dagster.cli", *args],
            cwd=ROOT, env=dict(os.environ), capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    def ledger_rows() -> int:
        con = psycopg2.connect(url)
        try:
            cur = con.cursor()
            cur.execute("SELECT to_regclass('upstream_ledger')")
            if cur.fetchone()[0] is None:
                return 0
            cur.execute("SELECT count(*) FROM upstream_ledger")
            return int(cur.fetchone()[0])
        finally:
            con.close()

    local_gate = settings.state_dir / "gate.sqlite"
    local_before = local_gate.read_bytes() if local_gate.exists() else None
    before = graph_digest(settings)
    digest = re.search(r"^batch (\w+):", cli("plan"), re.M)
    assert digest
    proc = subprocess.Popen(
        [sys.executable, "-m", "upstream_dagster.cli", "approve", "--all", "--digest", digest[1],
         "--reviewer", "alice", "--yes"],
        cwd=ROOT, env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 300
    while ledger_rows() < 5 and proc.poll() is None:
        assert time.monotonic() < deadline, "the write-back never started writing"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert graph_digest(settings) != before  # it wrote part of the batch
    # the gate's state was in PostgreSQL, not the state folder (whatever the copied estate
    # held there before is untouched)
    assert (local_gate.read_bytes() if local_gate.exists() else None) == local_before
    said = cli("reset", "--yes")
    assert "restored" in said
    assert graph_digest(settings) == before
