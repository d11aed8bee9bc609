"""What the read-only commands import, counted instead of timed (a loaded machine times
anything): `queue` and `show` read Dagster's journal alone, and `plan` reads DataHub Lite with
SQL, without a run. Each module named here cost a tenth of a second or more at start-up when it
crept back (issue 30: these commands within 2x `python -c "import dagster"`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from upstream_dagster.datahub.incident_keys import short_id
from upstream_dagster.defs import journal
from upstream_dagster.defs.instance import DAGSTER_YAML
from upstream_dagster.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
# Neither Upstream's definitions, nor DataHub's SDK or reads, nor estate.yaml's models, nor the
# SQL parser, nor the warehouse: none is needed to read the journal.
JOURNAL_ONLY = (
    "upstream_dagster.definitions",
    "upstream_dagster.runs",
    "upstream_dagster.datahub.incidents",
    "upstream_dagster.datahub.lite",
    "upstream_dagster.conformance.proposals",
    "datahub",
    "sqlglot",
    "duckdb",
    "dagster_dbt",
)
# The reliability and remediation areas: the score job that `plan` runs uses neither.
INCIDENTS = ("upstream_dagster.defs.reliability", "upstream_dagster.defs.remediation")
# Dagster's run storage: a command that reads the journal opens the embedded event log alone.
RUNS = "dagster._core.storage.runs.sqlite.sqlite_run_storage"
SPEC = "upstream_dagster.spec.models"  # estate.yaml's models: `show` names owners with spec.urns
KEY = "shop.orders:not_null_amount@2026-11-29T06:00:18.379Z~a94206c5"


def _loaded(state: Path, *argv: str) -> tuple[subprocess.CompletedProcess[str], dict[str, bool]]:
    """Run ``upstream ARGV`` in a fresh interpreter; which of the watched modules it loaded."""
    watched = sorted({*JOURNAL_ONLY, *INCIDENTS, "dagster", SPEC, RUNS})
    probe = (
        "import json, sys\nfrom upstream_dagster.cli import app\n"
        f"sys.argv = ['upstream', *{list(argv)!r}]\n"
        "try:\n    app()\nexcept SystemExit:\n    pass\n"
        f"print(json.dumps({{m: m in sys.modules for m in {watched!r}}}), file=sys.stderr)\n"
    )
    env = {**os.environ, "UPSTREAM_STATE_DIR": str(state), "UPSTREAM_PROJECT_ROOT": str(ROOT)}
    ran = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True
    )
    return ran, json.loads(ran.stderr.strip().splitlines()[-1])


def _journal(state: Path, config: str = DAGSTER_YAML) -> None:
    """A state folder whose journal holds a planned batch and an incident's verdict with a fix
    nobody approved, recorded as the score and reliability jobs record them."""
    home = state / "dagster_home"
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text(config)
    instance = dg.DagsterInstance.from_config(str(home))
    queued = "- coverage batch 0123456789abcdef: 3 proposals, 60.0% -> 70.0% projected"
    instance.report_runless_asset_event(
        dg.AssetMaterialization(journal.QUEUE, metadata={"queue": queued})
    )
    verdict = {
        "conclusion": "root cause shop.orders.amount (nulls), confidence 0.90",
        "confidence": 0.9,
        "risk": 0.4,
        "concluded": True,
        "remedy": "patch",
        "verdict_digest": "fedcba9876543210",
        "datahub_reads": 7,
        "rca": "## Root cause\n\nshop.orders.amount holds nulls.",
    }
    instance.report_runless_asset_event(
        dg.AssetMaterialization(journal.VERDICT, partition=KEY, metadata=verdict)
    )
    instance.dispose()


def test_queue_and_show_read_the_journal_and_nothing_else(tmp_path: Path) -> None:
    state = tmp_path / "state"
    _journal(state)
    queued, loaded = _loaded(state, "queue")
    assert queued.returncode == 0, queued.stderr[-2000:]
    assert "- coverage batch 0123456789abcdef" in queued.stdout
    assert f"- incident {KEY}: root cause shop.orders.amount" in queued.stdout
    assert loaded["dagster"] and not [m for m in (*JOURNAL_ONLY, SPEC, RUNS) if loaded[m]], loaded
    shown, loaded = _loaded(state, "show", short_id(KEY))
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "shop.orders.amount holds nulls" in shown.stdout
    assert f"upstream approve --incident {short_id(KEY)}" in shown.stdout
    assert not [m for m in (*JOURNAL_ONLY, RUNS) if loaded[m]], loaded


def test_a_dagster_yaml_that_keeps_storage_elsewhere_is_read_through_the_instance(
    tmp_path: Path,
) -> None:
    """A deployment's dagster.yaml may keep the journal in another folder or in PostgreSQL:
    `queue` and `show` then read it where the instance says, never the state folder's default."""
    state, elsewhere = tmp_path / "state", tmp_path / "elsewhere"
    _journal(state, DAGSTER_YAML + f"storage:\n  sqlite:\n    base_dir: {elsewhere}\n")
    assert (elsewhere / "history").is_dir()
    assert not (state / "dagster_home" / "history").exists()
    queued, loaded = _loaded(state, "queue")
    assert queued.returncode == 0, queued.stderr[-2000:]
    assert "- coverage batch 0123456789abcdef" in queued.stdout
    assert f"- incident {KEY}: root cause shop.orders.amount" in queued.stdout
    assert loaded[RUNS], "read through the whole instance"
    shown, _ = _loaded(state, "show", "latest")
    assert "shop.orders.amount holds nulls" in shown.stdout, shown.stderr[-2000:]


def test_plan_reads_datahub_lite_without_dagster_or_the_sdk(estate: Settings) -> None:
    """`plan` is a read: DataHub Lite read with SQL (the SDK, a third of a second, is for
    writes) and planned without a run, so neither Dagster nor a run's storage is loaded."""
    planned, loaded = _loaded(estate.state_dir, "plan")
    assert planned.returncode == 0, planned.stderr[-2000:]
    assert "proposals, conformance" in planned.stdout
    unneeded = ("dagster", "datahub", "dagster_dbt", "upstream_dagster.definitions", RUNS)
    assert not [m for m in unneeded if loaded[m]], loaded


def test_plan_record_runs_the_score_job_without_the_incident_areas(estate: Settings) -> None:
    """`plan --record` runs the score job: it loads with the definitions of the areas it runs,
    not the reliability area's, and reads DataHub Lite without the SDK."""
    planned, loaded = _loaded(estate.state_dir, "plan", "--record")
    assert planned.returncode == 0, planned.stderr[-2000:]
    assert "nonce " in planned.stdout and loaded["upstream_dagster.definitions"]
    unneeded = ("datahub", "dagster_dbt", "upstream_dagster.datahub.incidents", *INCIDENTS)
    assert not [m for m in unneeded if loaded[m]], loaded


def test_a_lite_read_leaves_the_sdk_unloaded_and_a_write_loads_it_under_the_sdk_home(
    tmp_path: Path,
) -> None:
    """DataHub Lite is read with SQL; the first write imports the SDK, which writes its
    telemetry file under the target's sdk_home, never in $HOME."""
    home, sdk = tmp_path / "home", tmp_path / "sdk"
    home.mkdir()
    code = (
        "import sys\nfrom pathlib import Path\n"
        "from upstream_dagster.datahub import Target, connected\n"
        f"target = Target(Path({str(tmp_path / 'lite.sqlite')!r}), Path({str(sdk)!r}))\n"
        "if sys.argv[1] == 'create':\n"
        "    with connected(target, create=True):\n        pass\n"
        "    sys.exit(0)\n"
        "with connected(target) as graph:\n"
        "    graph.search_prefix('urn:li:dataset:')\n"
        "    print('read', 'datahub' in sys.modules)\n"
        "    urn = 'urn:li:dataset:(urn:li:dataPlatform:duckdb,shop.orders,PROD)'\n"
        "    print('written', graph.write_aspect(urn, 'status', {'removed': False}).written)\n"
        "    print('write', 'datahub' in sys.modules)\n"
    )
    env = {**os.environ, "HOME": str(home), "UPSTREAM_STATE_DIR": str(tmp_path / "state")}
    for step in ("create", "use"):
        done = subprocess.run(
            [sys.executable, "-c", code, step], cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["read", "False", "written", "True", "write", "True"]
    assert (sdk / ".datahub").is_dir() and not (home / ".datahub").exists()
    assert not (tmp_path / "state" / "sdk_home").exists()


def test_a_model_key_makes_plan_record_so_the_prose_shown_is_the_prose_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With ANTHROPIC_API_KEY set, the score job words descriptions with a model; a read could
    not show the prose a run would write, so `plan` records instead (and shows the value)."""
    from upstream_dagster.cli.batches import narrated
    from upstream_dagster.spec.loader import load_estate

    spec = load_estate(ROOT / "estate.yaml")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert not narrated(spec)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    assert narrated(spec)
