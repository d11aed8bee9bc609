"""The reviewer's console without an estate: progress that survives a pipe, aligned tables,
short incident ids, and the launchpad links that approve from the UI (issue 28)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import dagster as dg
import pytest
import yaml

from upstream_dagster.datahub.incidents import short_id
from upstream_dagster.defs import incident_list, launch, progress
from upstream_dagster.errors import UpstreamError
from upstream_dagster.spec.models import Policies

cli_app = importlib.import_module("upstream_dagster.cli.app")  # the package exports the app
STAMP = re.compile(r"^\d\d:\d\d:\d\d ")


def test_a_command_whose_output_is_not_a_terminal_prints_timestamped_progress_lines(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Piped or in CI, `make demo` was silent for minutes: every phase and step is a plain
    line with the time, on stderr, and the end says how long it took."""
    with cli_app.running("building the estate"):
        progress.phase("1/2 first job")
        progress._tell(progress.Progress("step", "estate_dbt_assets"))
        progress._tell(progress.Progress("asset", "marts/fct_orders"))
        progress.phase("2/2 second job")
    err = capsys.readouterr().err.splitlines()
    assert err and all(STAMP.match(line) for line in err), err
    said = [STAMP.sub("", line) for line in err]
    assert said[0] == "building the estate..."
    assert said[1:4] == ["1/2 first job", "  step estate_dbt_assets", "2/2 second job"]
    assert re.fullmatch(r"done: building the estate \(\d+ s\)", said[-1])
    with pytest.raises(RuntimeError), cli_app.running("a failing step"):
        raise RuntimeError("boom")
    assert "stopped: a failing step" in capsys.readouterr().err


def test_the_spinner_names_the_whole_step_however_long_the_command_says_what_it_runs() -> None:
    """On an 80-column terminal the step was cut ("step estat"): the step is kept whole and
    the command's own words give way."""
    shown: list[str] = []
    what = "building the estate (raw feeds -> dbt build -> DataHub's own dbt source -> profiles)"
    spinner = cli_app._Spinner(what, shown.append, lambda: 80)
    spinner.tell(progress.Progress("step", "estate_dbt_assets"))
    spinner.tell(progress.Progress("asset", "marts/fct_orders"))
    assert all(len(t) <= 80 for t in shown), shown
    assert shown[-1].endswith("step estate_dbt_assets (1 asset materialized)")
    spinner.tell(progress.Progress("phase", "2/3 rebuilding the estate with the fix"))
    assert shown[-1] == "2/3 rebuilding the estate with the fix"


def test_tables_are_aligned_under_a_header_and_never_cut() -> None:
    long = "x" * 300
    lines = cli_app.table(("id", "gain", "value"), [("a", "+0.47", long), ("bbbb", "+12.00", "v")],
                          right=frozenset({1}))  # fmt: skip
    assert lines[0].split() == ["id", "gain", "value"]
    starts = {line.index(cell) for line, cell in zip(lines[1:], (long, "v"), strict=True)}
    assert len(starts) == 1  # the last column starts at one place
    gains = [line.index(g) + len(g) for line, g in zip(lines[1:], ("+0.47", "+12.00"), strict=True)]
    assert len(set(gains)) == 1  # numbers are right-aligned
    assert lines[1].endswith(long)  # nothing cut, however long


def _verdict(instance: dg.DagsterInstance, key: str, **meta: object) -> None:
    base = {
        "conclusion": "root cause vendor.discounts.discount_amt (rename), confidence 1.00",
        "confidence": "1.00",
        "concluded": True,
        "remedy": "patch",
        "verdict_digest": "d" * 16,
        "datahub_reads": 3,
        "risk": 0.5,
        "owners": "alice",
    }
    instance.report_runless_asset_event(
        dg.AssetMaterialization("incident_verdict", partition=key, metadata={**base, **meta})
    )


KEYS = [
    "marts.fct_orders:not_null_amount@2026-11-29T06:00:18.379Z~a94206c5",
    "marts.agg_daily_revenue:revenue_not_zero@2026-11-30T06:00:18.379Z~upstream-3d5b7657",
]


def test_an_incident_is_named_by_its_short_id_a_start_of_it_or_latest(tmp_path: Path) -> None:
    instance = dg.DagsterInstance.ephemeral()
    with pytest.raises(UpstreamError, match="no incident has been investigated"):
        incident_list.resolve(instance, "latest")
    for key in KEYS:
        _verdict(instance, key)
    ids = [short_id(k) for k in KEYS]
    assert all(re.fullmatch(r"[0-9a-f]{6}", i) for i in ids) and ids[0] != ids[1]
    assert short_id(KEYS[0]) == ids[0]  # the same on every call, every machine
    assert incident_list.resolve(instance, "latest") == KEYS[1]  # investigated last
    assert incident_list.resolve(instance, ids[0]) == KEYS[0]
    assert incident_list.resolve(instance, ids[0][:4]) == KEYS[0]
    assert incident_list.resolve(instance, KEYS[0]) == KEYS[0]
    with pytest.raises(UpstreamError) as refused:
        incident_list.resolve(instance, "ffffff-not-one")
    assert ids[1] in refused.value.problem and "upstream incidents" in refused.value.fix
    with pytest.raises(UpstreamError, match="no incident is"):
        incident_list.resolve(instance, ids[0][:3])  # too short to be taken as an id


def test_the_incident_list_says_status_age_confidence_and_owner() -> None:
    instance = dg.DagsterInstance.ephemeral()
    _verdict(instance, KEYS[0])
    _verdict(instance, KEYS[1], concluded=False, remedy="none", confidence="0.41")
    resolved_at = 1_764_400_000_000
    instance.report_runless_asset_event(
        dg.AssetMaterialization(
            "incident_resolution",
            partition=KEYS[0],
            metadata={
                "resolved": True,
                "resolved_at": dg.MetadataValue.timestamp(resolved_at / 1000),
            },
        )
    )

    class NoClaims:  # a store with nothing claimed: only the open one asks the gate store
        def read(self) -> object:
            raise AssertionError("the resolved and the abstained need no claim lookup")

    rows = incident_list.rows(instance, NoClaims())  # type: ignore[arg-type]
    assert [r.key for r in rows] == [KEYS[1], KEYS[0]]  # the newest first
    opened, resolved = rows
    assert opened.status == "open: abstained, needs a person" and opened.confidence == 0.41
    assert (resolved.dataset, resolved.check) == ("marts.fct_orders", "not_null_amount")
    assert resolved.status == "resolved" and resolved.owner == "alice"
    assert resolved.age(0) == incident_list.duration(resolved_at - resolved.opened_ms).join(
        ("resolved in ", "")
    )
    assert incident_list.duration(3 * 3600_000 + 5 * 60_000) == "3 h 05 min"
    assert incident_list.duration(50 * 3600_000) == "2 d 2 h"


def _query(url: str) -> dict[str, list[str]]:
    parts = urlsplit(url)
    assert parts.path.startswith("/guess/") and parts.path.endswith("/playground/setup")
    return parse_qs(parts.query)


def test_a_launchpad_link_carries_the_batch_and_leaves_only_the_reviewer_to_type() -> None:
    """The link the proposals asset shows opens the write-back's launchpad with the digest,
    the one-time value and the chosen ids filled in, each id on its own line (delete one to
    leave it out), and the reviewer blank; the tags say it came from the launchpad."""
    policies = Policies(actuation="ratify", approvers=["alice", "bob"], identity="not-enforced")
    chosen = [("p-1", "+0.47 fct_orders (dbt): alice"), ("p-2", "+0.47 dim (dbt): bob")]
    config = launch.batch_config(policies, "d1", "n1", chosen)
    url = launch.launchpad("coverage_writeback_job", config, {launch.LAUNCHED_BY: "launchpad"})
    query = _query(url)
    (text,) = query["config"]
    assert text == config
    parsed = yaml.safe_load(text)["ops"]["coverage_writeback"]["config"]
    assert parsed == {
        "reviewer": "",
        "batch_digest": "d1",
        "nonce": "n1",
        "approve": ["p-1", "p-2"],
    }
    assert "alice or bob" in text  # who may approve, said where the name is typed
    assert len([line for line in text.splitlines() if line.strip().startswith("- p-")]) == 2
    assert query["tags[0][key]"] == [launch.LAUNCHED_BY]
    every = yaml.safe_load(launch.batch_config(policies, "d1", "n1", None))
    assert every["ops"]["coverage_writeback"]["config"]["approve"] == ["all"]
    signed = Policies(actuation="ratify", approvers=["alice"])  # identity: signed by default
    proof = yaml.safe_load(launch.incident_config(signed, "v1", "n2"))["ops"]["incident_fix"][
        "config"
    ]
    assert proof == {"reviewer": "", "proof": "", "verdict_digest": "v1", "nonce": "n2"}
    assert "upstream sign --kind fix --digest v1" in launch.incident_config(signed, "v1", "n2")


def test_who_launched_a_run_is_read_from_its_tags() -> None:
    assert launch.launched_by({launch.LAUNCHED_BY: "cli"}) == "cli"
    assert launch.launched_by({"dagster/sensor_name": "failing_assertions"}) == (
        "sensor:failing_assertions"
    )
    assert (
        launch.launched_by({"dagster/schedule_name": "nightly_score"}) == "schedule:nightly_score"
    )
    assert launch.launched_by({}) == "launchpad"
    tags = launch.by_sensor("failed_builds", "x" * 500)
    assert tags[launch.LAUNCHED_BY] == "sensor:failed_builds" and len(tags["upstream/why"]) == 200


def test_opening_the_warehouse_while_another_process_holds_it_waits_its_turn(
    tmp_path: Path,
) -> None:
    """`plan` during a build failed on DuckDB's file lock: an open now waits (and says so
    once) until the holder lets go, then goes on."""
    import subprocess
    import sys
    import threading

    from upstream_dagster.warehouse import duckdb_warehouse as wh

    path = tmp_path / "warehouse.duckdb"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         f"import duckdb, sys\ncon = duckdb.connect({str(path)!r})\n"
         "con.execute('create table t as select 1 as x')\nprint('held', flush=True)\n"
         "sys.stdin.read()\ncon.close()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    told: list[str] = []
    waited = threading.Event()
    rows: list[object] = []
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"

        def read() -> None:
            with wh.connect(path) as con:
                rows.append(con.execute("select x from t").fetchone())

        def tell(message: str) -> None:
            told.append(message)
            waited.set()

        with wh.waiting(tell):
            reader = threading.Thread(target=read)
            reader.start()
            assert waited.wait(120), "the open never said it was waiting"
            assert rows == []  # still waiting while the holder holds the file
            assert holder.stdin is not None
            holder.stdin.close()  # the build ends
            reader.join(300)
        assert rows == [(1,)] and len(told) == 1 and "waiting for the warehouse" in told[0]
    finally:
        holder.kill()
        holder.wait()


def test_the_readme_is_read_in_five_minutes() -> None:
    """Issue 28: the README grew to 20 KB; it stays within 15 KB, the rest under docs/."""
    assert (Path(__file__).resolve().parent.parent / "README.md").stat().st_size <= 15360


def test_upstreams_own_assets_are_owned_by_the_estates_approvers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 28: Upstream's own assets had no owners in Dagster; they are owned by the people
    who act on what they propose (estate.yaml's approvers), as Dagster names owners."""
    from upstream_dagster import settings as settings_mod
    from upstream_dagster.definitions import core

    spec = yaml.safe_load((Path(__file__).resolve().parent.parent / "estate.yaml").read_text())
    spec["policies"]["approvers"] = ["dana@example.org", "data platform"]
    estate = tmp_path / "estate.yaml"
    estate.write_text(yaml.safe_dump(spec))
    monkeypatch.setenv("UPSTREAM_ESTATE", str(estate))
    monkeypatch.setenv("UPSTREAM_STATE_DIR", str(tmp_path / "state"))
    graph = core(settings_mod.load()).resolve_asset_graph()
    for name in ("conformance", "proposals", "coverage_writeback"):
        owners = graph.get(dg.AssetKey(name)).owners
        assert owners == ["dana@example.org", "team:data-platform"], (name, owners)


def test_a_check_a_run_planned_and_never_evaluated_is_no_failure_to_link() -> None:
    """dbt skips the tests below a failing model: the run plans the check and never evaluates
    it. The incident's link to the failing check must read that as no result (it crashed the
    verdict step: the plan has no pass or fail)."""
    from upstream_dagster.defs.incident_view import latest_failure

    state = {"fail_asset": False}

    @dg.asset(check_specs=[dg.AssetCheckSpec("rows_present", asset="orders")])
    def orders() -> dg.MaterializeResult:
        if state["fail_asset"]:
            raise RuntimeError("upstream build failed")
        return dg.MaterializeResult(check_results=[dg.AssetCheckResult(passed=False)])

    instance = dg.DagsterInstance.ephemeral()
    key = dg.AssetCheckKey(dg.AssetKey("orders"), "rows_present")
    dg.materialize([orders], instance=instance)
    failed = latest_failure(instance, key)
    assert failed is not None and not failed.passed
    state["fail_asset"] = True
    dg.materialize([orders], instance=instance, raise_on_error=False)
    record = instance.get_latest_asset_check_evaluation_record(key)
    assert record is not None and record.status.value == "PLANNED"
    assert latest_failure(instance, key) is None
