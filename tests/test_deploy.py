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

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "docs" / "deploy" / "dagster.yaml"
PG_ENV = {
    "DAGSTER_PG_HOST": "127.0.0.1",
    "DAGSTER_PG_DB": "dagster",
    "DAGSTER_PG_USERNAME": "dagster",
    "DAGSTER_PG_PASSWORD": "dagster",
    "DAGSTER_K8S_NAMESPACE": "upstream",
}


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
    from upstream_dagster.defs.resources import WRITEBACK_POOL, WRITEBACK_TAGS

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


@pytest.mark.slow
def test_postgres_instance_holds_write_backs_to_one_at_a_time(
    postgres: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two write-back runs started together in two processes, on the deployment's PostgreSQL
    storage: the second waits for the first's pool slot; both runs are in PostgreSQL."""
    import dagster as dg

    for key, value in PG_ENV.items():
        monkeypatch.setenv(key, value)
    config = yaml.safe_load(DEPLOY.read_text())
    config["storage"]["postgres"]["postgres_db"]["port"] = postgres
    del config["run_launcher"]  # no Kubernetes here: runs execute in local processes
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(yaml.safe_dump(config))
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    instance = dg.DagsterInstance.get()
    assert type(instance.run_storage).__name__ == "PostgresRunStorage"

    # the deployment's one-time step (docs/deploy/dagster.yaml): the pool exists before two
    # write-backs can race to create it (on PostgreSQL the loser fails on a unique key)
    from upstream_dagster.defs.resources import WRITEBACK_POOL

    subprocess.run(
        [str(Path(sys.executable).with_name("dagster")), "instance", "concurrency", "set",
         WRITEBACK_POOL, "1"],
        check=True, cwd=ROOT, capture_output=True, timeout=120,
    )  # fmt: skip
    log = tmp_path / "held.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    workers = [
        subprocess.Popen([sys.executable, "-m", "tests.deploy_jobs", str(log)], cwd=ROOT, env=env)
        for _ in range(2)
    ]
    assert [w.wait(timeout=240) for w in workers] == [0, 0]

    held = sorted(
        tuple(float(x) for x in line.split()[1:]) for line in log.read_text().split("\n") if line
    )
    assert len(held) == 2
    (first_start, first_end), (second_start, _) = held
    assert second_start >= first_end, f"the two write-backs overlapped: {held}"
    runs = instance.get_run_records(dg.RunsFilter(job_name="writeback_standin"))
    assert len(runs) == 2 and all(r.dagster_run.tags.get("upstream/writeback") for r in runs)
    assert all(r.dagster_run.status == dg.DagsterRunStatus.SUCCESS for r in runs)


def test_datahub_address_and_token_reach_a_run_through_env_vars_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import json

    import dagster as dg

    from upstream_dagster.defs.resources import datahub_resource

    from .deploy_jobs import datahub_target

    instance = dg.DagsterInstance.ephemeral()
    from upstream_dagster.settings import load

    assert dg.materialize([datahub_target], resources={"datahub": datahub_resource(load())},
                          instance=instance).output_for_node("datahub_target") == (
        "lite None token=none"
    )  # fmt: skip
    monkeypatch.setenv("DATAHUB_GMS_URL", "http://gms.internal:8080")
    monkeypatch.setenv("DATAHUB_GMS_TOKEN", "s3cret-token")
    resource = datahub_resource(load())
    # what Dagster stores and shows is the variable's name, never its value
    shown = resource.get_resource_definition().config_schema.default_value
    assert shown["gms_url"] == {"env": "DATAHUB_GMS_URL"}
    assert shown["token_env"] == "DATAHUB_GMS_TOKEN"  # a variable's name, never a token
    assert "s3cret-token" not in json.dumps(shown)
    result = dg.materialize([datahub_target], resources={"datahub": resource}, instance=instance)
    assert result.output_for_node("datahub_target") == "gms http://gms.internal:8080 token=set"
    run = instance.get_run_by_id(result.run_id)
    assert run is not None
    logged = json.dumps(run.run_config) + " ".join(str(e) for e in instance.all_logs(result.run_id))
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
    shown = defs.resources["datahub"].get_resource_definition().config_schema.default_value
    assert "gms_token" not in shown and shown.get("token_env") == "DATAHUB_GMS_TOKEN"
