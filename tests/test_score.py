"""The dial end to end: selectors through DataHub search, the score job, the CLI, the checks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg

from upstream_dagster.conformance.score import Dial
from upstream_dagster.datahub.lite import LiteGraph
from upstream_dagster.definitions import build
from upstream_dagster.runs import run_job
from upstream_dagster.settings import Settings

ROOT = Path(__file__).resolve().parent.parent


def score_cli(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "UPSTREAM_STATE_DIR": str(settings.state_dir)}
    return subprocess.run(
        [sys.executable, "-m", "upstream_dagster.cli", "score", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_two_processes_with_a_pinned_clock_print_byte_identical_dials(estate: Settings) -> None:
    first, second = score_cli(estate), score_cli(estate)
    assert first.returncode == 0, first.stderr[-2000:]
    assert first.stdout == second.stdout
    lines = first.stdout.splitlines()
    assert lines[0].startswith("tier-1") and any(line.startswith("overall") for line in lines)
    assert "by requirement" in first.stdout


def dial_of(result: dg.ExecuteInProcessResult) -> Dial:
    dial = result.output_for_node("conformance")
    assert isinstance(dial, Dial)
    return dial


def test_the_dial_reports_per_tier_per_requirement_and_overall(estate: Settings) -> None:
    result = run_job(estate, "score")
    dial = dial_of(result)
    tiers = dict(dial.by_tier)
    assert sum(t.checks for t in tiers.values()) == dial.overall.checks
    assert dial.overall.assets == 50 and not dial.unmatched
    # first tier wins: tier1-tagged marts are in tier-1 even though tier-2 also matches fct_*
    tier_of = {r.asset.split(",")[1]: r.tier for r in dial.results}
    assert tier_of["warehouse.marts.fct_orders"] == "tier-1"
    assert tier_of["warehouse.marts.fct_shipments"] == "tier-2"
    assert tier_of["warehouse.vendor.discounts"] == "raw-feeds"
    # a requirement nothing in the graph can satisfy stays a violation
    assert dict(dial.by_requirement)["required_structured_properties"].passed == 0
    materialized = result.asset_materializations_for_node("conformance")[0].metadata
    assert materialized["overall_percent"].value == dial.overall.percent
    assert materialized["percent tier-1"].value == tiers["tier-1"].percent
    assert materialized["incidents_active"].value == 0  # plotted beside the dial, nightly
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert checks["every_selector_matches"].passed
    violations = result.output_for_node("violations")
    assert violations and violations[0].risk.score >= violations[-1].risk.score
    assert "risk" in violations[0].risk.explain() and "n/a" in violations[0].risk.explain()


def test_a_new_model_is_in_scope_on_the_next_run(estate: Settings) -> None:
    before = dict(dial_of(run_job(estate, "score")).by_tier)["tier-2"].assets
    model = estate.dbt_project_dir / "models" / "marts" / "fct_refunds_daily.sql"
    model.write_text(
        "select return_date, sum(refund_amount) as refunds\n"
        "from {{ ref('stg_returns') }} group by 1\n"
    )
    run_job(estate, "estate_refresh")
    after = dial_of(run_job(estate, "score"))
    assert dict(after.by_tier)["tier-2"].assets == before + 1
    assert any("fct_refunds_daily" in r.asset and r.tier == "tier-2" for r in after.results)


def test_a_selector_matching_nothing_fails_its_check(
    estate: Settings, tmp_path: Path, monkeypatch: object
) -> None:
    text = (ROOT / "estate.yaml").read_text().replace("- tags: [tier1]", "- tags: [tier0]")
    path = tmp_path / "estate.yaml"
    path.write_text(text)
    os.environ["UPSTREAM_ESTATE"] = str(path)
    try:
        from upstream_dagster import settings as settings_mod

        result = run_job(settings_mod.load(), "score")
    finally:
        del os.environ["UPSTREAM_ESTATE"]
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert not checks["every_selector_matches"].passed
    assert "tier-1 match[0]" in str(checks["every_selector_matches"].metadata["empty_selectors"])


def test_a_drop_in_conformance_raises_a_warning(estate: Settings) -> None:
    run_job(estate, "score")
    graph = LiteGraph(estate.lite_file)
    try:  # someone removes every owner in DataHub
        owned = graph.search_prefix("urn:li:dataset:")
        for urn in owned:
            graph.delete_aspect(urn, "ownership")
    finally:
        graph.close()
    result = run_job(estate, "score")
    check = {e.check_name: e for e in result.get_asset_check_evaluations()}[
        "conformance_did_not_fall"
    ]
    assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN
    assert check.metadata["previous_percent"].value > check.metadata["current_percent"].value


def test_the_score_runs_nightly_at_two(shared_estate: Settings) -> None:
    schedule = build(shared_estate).resolve_schedule_def("nightly_score")
    assert schedule.cron_schedule == "0 2 * * *" and schedule.job_name == "score"


def test_score_is_a_read_that_never_loads_dagster_and_prints_what_the_job_scores(
    estate: Settings,
) -> None:
    """`upstream score` took 12 s, most of it deploying and loading definitions to launch a run
    that only reads. It is now the conformance asset's own service, read directly (no run, no
    Dagster import); `--record` runs the score job and must print the same dial."""
    plain, recorded = score_cli(estate), score_cli(estate, "--record")
    assert plain.returncode == 0 and recorded.returncode == 0, plain.stderr + recorded.stderr
    assert plain.stdout == recorded.stdout
    probe = (
        "import sys\nfrom upstream_dagster.cli import app\nsys.argv = ['upstream', 'score']\n"
        "try:\n    app()\nexcept SystemExit:\n    pass\n"
        "print('dagster loaded:', 'dagster' in sys.modules)\n"
    )
    env = {**os.environ, "UPSTREAM_STATE_DIR": str(estate.state_dir)}
    ran = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert "overall" in ran.stdout and "dagster loaded: False" in ran.stdout, ran.stderr[-2000:]


def test_a_command_is_told_each_step_its_run_starts(estate: Settings) -> None:
    """`plan`, `approve`, `verify`, `reset` took 15-23 s with nothing shown: the spinner now
    names the step the run is in, from the run's own step-start events."""
    from upstream_dagster.defs.progress import steps

    seen: list[str] = []
    with steps(seen.append):
        run_job(estate, "score")
    assert seen[:3] == ["estate_spec", "metadata_context", "conformance"]
    assert "proposals" in seen and "approval_queue" in seen
    run_job(estate, "score")  # no listener: nothing is told, nothing fails
    assert len(seen) == len(set(seen))


def test_a_scheduled_observation_scores_again_only_when_datahub_changed(estate: Settings) -> None:
    """The DataHub source asset is observed on a schedule; datahub_changed launches the score
    job when the observed data version moved (here: a steward adds an owner in DataHub)."""
    from upstream_dagster.definitions import core
    from upstream_dagster.defs.watch import datahub_changed, newest_version, observe_schedule
    from upstream_dagster.runs import dagster_instance

    defs = core(estate)
    assert defs.resolve_schedule_def(observe_schedule.name).job_name == "observe_datahub"
    instance = dagster_instance(estate)

    def tick(cursor: str | None) -> dg.SensorResult | dg.SkipReason:
        ctx = dg.build_sensor_context(instance=instance, cursor=cursor, definitions=defs)
        result = datahub_changed(ctx)
        assert isinstance(result, dg.SensorResult | dg.SkipReason)
        return result

    unseen = tick(None)
    assert isinstance(unseen, dg.SkipReason) and "not been observed" in str(unseen.skip_message)
    run_job(estate, "observe_datahub")
    first = newest_version(instance)
    started = tick(None)
    assert isinstance(started, dg.SensorResult) and not started.run_requests
    assert started.cursor == first
    run_job(estate, "observe_datahub")  # nothing changed: same version, no score
    assert newest_version(instance) == first
    same = tick(first)
    assert isinstance(same, dg.SkipReason) and "unchanged" in str(same.skip_message)

    graph = LiteGraph(estate.lite_file)
    try:
        (dataset,) = [u for u in graph.search_prefix("urn:li:dataset:") if "fct_orders" in u][:1]
        owner = {"owner": "urn:li:corpuser:steward", "type": "DATAOWNER"}
        graph.write_aspect(dataset, "ownership", {"owners": [owner]})
    finally:
        graph.close()
    run_job(estate, "observe_datahub")
    moved = tick(first)
    assert isinstance(moved, dg.SensorResult) and moved.cursor != first
    (request,) = moved.run_requests or []
    assert request.run_key == f"datahub-{moved.cursor}"

    graph = LiteGraph(estate.lite_file)  # a description alone, as a steward edits it in DataHub
    try:
        graph.write_aspect(dataset, "editableDatasetProperties", {"description": "Orders."})
    finally:
        graph.close()
    run_job(estate, "observe_datahub")
    described = tick(moved.cursor)
    assert isinstance(described, dg.SensorResult) and described.run_requests
    assert defs.resolve_sensor_def("datahub_changed").job_name == "score"
