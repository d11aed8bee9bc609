"""Packaging facts a new user depends on: the workspace loads, state stays out of $HOME, and a
pinned clock reproduces the demo data to the byte."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from upstream_dagster.demo import generator
from upstream_dagster.demo.generator import load_warehouse
from upstream_dagster.settings import Settings

ROOT = Path(__file__).resolve().parent.parent


def test_workspace_loads_with_dbt_and_ingest_assets(shared_estate: Settings) -> None:
    env = {**os.environ, "UPSTREAM_STATE_DIR": str(shared_estate.state_dir)}
    done = subprocess.run(
        [
            str(Path(sys.executable).with_name("dagster")),
            "definitions",
            "validate",
            "-w",
            "workspace.yaml",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    from upstream_dagster.definitions import build

    defs = build(shared_estate)
    keys = {k.to_user_string() for k in defs.resolve_all_asset_keys()}
    assert {
        "datahub_metadata",
        "marts/agg_daily_revenue",
        "staging/stg_vendor_discounts",
        "vendor/discounts",
    } <= keys
    assert {j.name for j in defs.resolve_all_job_defs()} >= {"estate_build", "estate_refresh"}


def test_a_dbt_command_costs_no_version_subprocess_and_no_adapter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each build run asked `dbt --version` in a subprocess and opened a dbt adapter in the run
    for every dbt command (about 3 s of CPU per build): the dbt beside this interpreter is the
    installed dbt-core, and Upstream reads nothing the adapter serves."""
    from importlib import metadata

    import dagster_dbt.core.resource as dbt_resource

    from upstream_dagster.defs.estate import DeployedDbt
    from upstream_dagster.warehouse.dbt_project import dbt_executable

    (tmp_path / "dbt_project.yml").write_text("name: p\nprofile: p\n")
    asked: list[object] = []
    monkeypatch.setattr(dbt_resource, "check_output", lambda *a, **k: asked.append(a) or b"")
    dbt = DeployedDbt(project_dir=str(tmp_path), dbt_executable=dbt_executable())
    assert str(dbt._cli_version) == metadata.version("dbt-core") and not asked
    assert dbt._initialize_dbt_core_adapter(["build"]) is None
    # another dbt executable (a dbt Fusion on PATH, say) is still asked its version
    other = DeployedDbt(project_dir=str(tmp_path), dbt_executable=sys.executable)
    monkeypatch.setattr(dbt_resource, "check_output", lambda *a, **k: b"dbt-fusion 2.0.1")
    assert other._cli_version.major == 2


def test_the_ingestions_dbt_commands_share_one_process_and_a_broken_project_says_why(
    estate: Settings,
) -> None:
    """`source freshness` and `docs generate` ran as two dbt processes after every build (one
    start-up and one parse each): one process now, every artifact in one folder; a project
    that no longer parses runs nothing and says dbt's own reason."""
    from upstream_dagster.defs.estate import DeployedDbt
    from upstream_dagster.warehouse.dbt_project import DbtProject, dbt_executable

    project = DbtProject.of(estate)
    manifest = project.manifest()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("UPSTREAM_WAREHOUSE", project.warehouse_path)
        dbt = DeployedDbt(
            project_dir=str(project.project_dir),
            profiles_dir=str(project.project_dir),
            dbt_executable=dbt_executable(),
        )
        done = dbt.chain(["source", "freshness"], ["docs", "generate"], manifest=manifest)
        assert done.succeeded == (True, True), done.output
        # run by the dbt worker this process keeps: the next chain pays no dbt start-up
        from upstream_dagster.warehouse import dbt_worker

        worker = dbt_worker._worker
        assert worker is not None and worker.owner == os.getpid() and worker.proc.poll() is None
        written = {p.name for p in done.target.iterdir()}
        assert {"sources.json", "catalog.json", "manifest.json"} <= written
        compiled = json.loads((done.target / "manifest.json").read_text())["nodes"]
        assert all(n["compiled_code"] for n in compiled.values() if n["resource_type"] == "model")
        catalog = json.loads((done.target / "catalog.json").read_text())
        assert len(catalog["nodes"]) == sum(
            1 for n in compiled.values() if n["resource_type"] in ("model", "seed")
        )
        # a model that no longer compiles: nothing runs, dbt's reason is kept
        model = next(project.project_dir.glob("models/**/*.sql"))
        model.write_text("select {{ no_such_macro() }}\n")
        broken = dbt.chain(["docs", "generate"], manifest=manifest)
        assert broken.succeeded != (True,)
        assert (
            "no_such_macro" in broken.output
            or "no_such_macro" in (broken.target / "dbt.log").read_text()
        ), broken.output
        assert not (broken.target / "catalog.json").exists()
        # a chain that failed ends its worker: dbt may leave threads that reopen the warehouse
        assert worker.proc.poll() is not None


@pytest.mark.slow
def test_importing_and_using_datahub_never_writes_to_home(tmp_path: Path) -> None:
    home, state = tmp_path / "home", tmp_path / "state"
    home.mkdir()
    script = (
        "from upstream_dagster import settings\n"
        "from upstream_dagster.datahub import open_graph\n"
        "g = open_graph(settings.load(), create=True)\n"
        "print(g.write_aspect('urn:li:tag:x', 'tagKey', {'name': 'x'}))\n"
        "g.close()\n"
    )
    env = {**os.environ, "HOME": str(home), "UPSTREAM_STATE_DIR": str(state)}
    env.pop("DATAHUB_GMS_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "written=True" in done.stdout
    assert list(home.iterdir()) == []
    assert (state / "sdk_home" / ".datahub").is_dir()


def _digest(warehouse: Path) -> str:
    digest = hashlib.sha256()
    with duckdb.connect(str(warehouse), read_only=True) as con:
        tables = con.execute(
            "SELECT table_schema, table_name FROM information_schema.tables ORDER BY 1, 2"
        ).fetchall()
        for schema, table in tables:
            for row in con.execute(f"SELECT * FROM {schema}.{table} ORDER BY ALL").fetchall():
                digest.update(repr(row).encode())
    return digest.hexdigest()


@pytest.mark.slow
def test_pinned_clock_reproduces_the_raw_feeds_to_the_byte(tmp_path: Path) -> None:
    at = datetime(2026, 3, 1, 6, tzinfo=UTC)
    counts = load_warehouse(tmp_path / "a.duckdb", at)
    generator._feed_files.cache_clear()  # generated again, not the process's copy
    load_warehouse(tmp_path / "b.duckdb", at)
    assert _digest(tmp_path / "a.duckdb") == _digest(tmp_path / "b.duckdb")
    assert counts["vendor.discounts"] > 1000
    with duckdb.connect(str(tmp_path / "a.duckdb"), read_only=True) as con:
        first, last, days = con.execute(
            "SELECT min(order_ts)::date, max(order_ts)::date, count(DISTINCT order_ts::date) "
            "FROM shop.orders"
        ).fetchone()
    assert str(last) == "2026-03-01" and days >= 90  # anchored to the clock, 90+ daily partitions
    load_warehouse(tmp_path / "c.duckdb", datetime(2026, 3, 2, 6, tzinfo=UTC))
    assert _digest(tmp_path / "c.duckdb") != _digest(tmp_path / "a.duckdb")


def test_every_asset_check_job_sensor_and_schedule_says_what_it_does(
    shared_estate: Settings,
) -> None:
    """A reviewer reads these in the Dagster UI: nothing may show up without a description."""
    from upstream_dagster.definitions import build

    repo = build(shared_estate).get_repository_def()
    missing = []
    for assets_def in set(repo.assets_defs_by_key.values()):
        missing += [
            k.to_user_string() for k in assets_def.keys if not assets_def.descriptions_by_key.get(k)
        ]
        missing += [str(c.key) for c in assets_def.check_specs if not c.description]
    for checks_def in set(repo.asset_checks_defs_by_key.values()):
        missing += [str(c.key) for c in checks_def.check_specs if not c.description]
    missing += [
        j.name for j in repo.get_all_jobs() if not j.name.startswith("__") and not j.description
    ]
    missing += [s.name for s in repo.sensor_defs if not s.description]
    missing += [s.name for s in repo.schedule_defs if not s.description]
    assert missing == []
    tests = [c for a in repo.assets_defs_by_key.values() for c in a.check_specs]
    assert any("fails when" in (c.description or "") for c in tests)
