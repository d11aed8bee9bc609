"""`upstream detect` on a small estate with the real parts: the seeded dbt-duckdb project built
by `upstream build` (dbt, DuckDB, DataHub Lite), faults tried in a sandbox copy, the dial
reading the measurement. What a user sees: the faults that slipped through, per asset, and the
check that caught each of the others; the team's warehouse untouched."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from upstream_dagster import settings as settings_mod
from upstream_dagster.cli import app

ROOT = Path(__file__).resolve().parent.parent
OWN = ROOT / "tests/estates/seeded"
ESTATE = """version: 1
tiers:
  - name: reporting
    match:
      - names: ["revenue_*"]
    requirements:
      require_owner: true
      min_fault_detection: 0.8
  - name: staging
    match:
      - names: ["stg_*"]
    requirements:
      require_description: true
policies:
  actuation: ratify
  approvers: [alice]
  identity: not-enforced
  detection: {seed: 10, faults_per_tier: 3, max_seconds: 300}
monitors:
  - name: revenue_not_null
    rule: null_rate_jump
    match:
      - names: ["revenue_by_region"]
    columns: [revenue]
    threshold: 0.1
"""

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("detect")
    shutil.copytree(OWN / "dbt", root / "project")
    (root / "estate.yaml").write_text(ESTATE)
    env = {
        "UPSTREAM_DBT_SOURCE": str(root / "project"),
        "UPSTREAM_ESTATE": str(root / "estate.yaml"),
        "UPSTREAM_STATE_DIR": str(root / "state"),
        "UPSTREAM_CLOCK": "2026-11-29T06:00:00Z",
    }
    with pytest.MonkeyPatch.context() as patch:  # the module's environment, restored after
        for key, value in env.items():
            patch.setenv(key, value)
        patch.delenv("UPSTREAM_FEEDS", raising=False)
        result = CliRunner().invoke(app, ["build"])
        assert result.exit_code == 0, result.output[-3000:]
    return env


@pytest.fixture
def settings(seeded: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> settings_mod.Settings:
    for key, value in seeded.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("UPSTREAM_FEEDS", raising=False)
    return settings_mod.load()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_detect_names_the_faults_that_slipped_through_per_asset_and_the_dial_shows_them(
    settings: settings_mod.Settings,
) -> None:
    from upstream_dagster.conformance import detection
    from upstream_dagster.evaluation.bench.own_project import tree_digest

    before = _digest(settings.warehouse), tree_digest(settings.dbt_project_dir)
    unmeasured = CliRunner().invoke(app, ["score"])
    assert "not measured on 1 asset(s): run `upstream detect`" in unmeasured.output

    result = CliRunner().invoke(app, ["detect"])
    assert result.exit_code == 0, result.output[-3000:]
    found = detection.load(settings.state_dir)
    assert found is not None
    trials = found.by_asset
    [asset] = [u for u in trials if "revenue_by_region" in u]
    assert len(trials[asset]) == 3
    missed = [t for t in trials[asset] if not t.caught_by]
    assert missed, "seed 10 draws faults the seeded estate's checks miss"
    for t in missed:
        assert f"MISSED (no check fired): {t.fault}" in result.output

    scored = CliRunner().invoke(app, ["score"]).output
    assert "analytics.revenue_by_region (reporting): fail: checks caught" in scored
    for t in missed:
        assert f"    missed: {t.fault}" in scored
    # the sandbox was a copy: the team's warehouse and deployed project are as they were
    assert (_digest(settings.warehouse), tree_digest(settings.dbt_project_dir)) == before

    again = CliRunner().invoke(app, ["detect"])  # the same seed: the same faults, same verdicts
    assert again.exit_code == 0, again.output[-3000:]
    second = detection.load(settings.state_dir)
    assert second is not None and second.trials == found.trials


def test_each_fault_is_caught_by_the_check_that_sees_it_or_reported_missed(
    settings: settings_mod.Settings, tmp_path: Path
) -> None:
    from upstream_dagster.evaluation.detect import Bench, _planned
    from upstream_dagster.evaluation.scenario import Fault
    from upstream_dagster.spec.loader import load_estate
    from upstream_dagster.warehouse.dbt_project import DbtProject
    from upstream_dagster.warehouse.sandbox import sandbox_copy

    spec = load_estate(settings.estate_file)
    _, _, watch = _planned(settings, spec)
    bench = Bench(sandbox_copy(DbtProject.of(settings), tmp_path), spec, watch, tmp_path)
    bench.prepare()

    def fault(kind: str, relation: str, **more: object) -> Fault:
        return Fault.model_validate({"kind": kind, "relation": relation, **more})

    nulls = fault("null_column", "analytics.stg_invoices", column="account_id", fraction=0.3)
    assert "dbt test not_null_stg_invoices_account_id" in bench.trial(nulls)
    revenue = fault("null_column", "analytics.revenue_by_region", column="revenue", fraction=0.9)
    assert bench.trial(revenue) == (
        "monitor revenue_not_null on analytics.revenue_by_region.revenue",
    )
    # a unit change: no test and no monitor looks at the size of revenue
    scaled = fault("scale_values", "analytics.raw_invoices", column="amount", factor=0.01)
    assert bench.trial(scaled) == ()


def _detection_reason(dial: Any) -> str:
    (found,) = [
        r.reason
        for r in dial.results
        if r.requirement == "min_fault_detection" and "revenue_by_region" in r.asset
    ]
    return str(found)


def test_approving_the_proposed_check_raises_detection_to_the_projection_and_reset_restores(
    settings: settings_mod.Settings,
) -> None:
    from upstream_dagster.conformance import detection
    from upstream_dagster.runs import run_job
    from upstream_dagster.state import approvals
    from upstream_dagster.state.store import GateStore

    assert CliRunner().invoke(app, ["detect"]).exit_code == 0
    batch = run_job(settings, "score").output_for_node("proposals")
    [proposal] = [p for p in batch.proposals if p.requirement == "min_fault_detection"]
    # the duplicated rows of the mart: a uniqueness assertion on its grain; the new code value
    # upstream ('unknown') makes a region of a handful of invoices: the range learnt from the
    # clean mart. Both tried on the faults in the sandbox.
    assert proposal.change.values == ("in_range:invoices=38..260", "unique:region")
    assert any("unique:region fails on: duplicate_rows" in e for e in proposal.evidence)
    assert any("in_range:invoices=38..260 fails on: set_value" in e for e in proposal.evidence)
    assert any("still missed: set_value" in e for e in proposal.evidence)
    before, projected = _detection_reason(batch.base), _detection_reason(batch.projected)
    assert "caught 0 of 3 faults" in before and "caught 2 of 3 faults" in projected

    held = approvals.outstanding(GateStore.local(settings.state_dir), "batch", batch.digest)
    config = {"batch_digest": batch.digest, "approve": [proposal.id], "reviewer": "alice",
              "nonce": held.nonce if held else ""}  # fmt: skip
    run_job(settings, "coverage_writeback_job", {"ops": {"coverage_writeback": {"config": config}}})
    (check,) = run_job(settings, "coverage_verify_job").get_asset_check_evaluations()
    assert check.passed, check.metadata  # measured == projected, on the whole dial
    assert f"{projected}" in CliRunner().invoke(app, ["score"]).output

    # measured again from scratch: the written assertion runs in the sandbox and catches it
    again = CliRunner().invoke(app, ["detect"])
    assert again.exit_code == 0, again.output[-3000:]
    assert "caught 2 of 3 faults" in again.output
    measured = detection.load(settings.state_dir)
    assert measured is not None
    written = set(proposal.change.values)
    held_by = [written & set(t.would_catch) for t in measured.all_trials()]
    assert sorted(map(sorted, filter(None, held_by))) == [
        ["in_range:invoices=38..260"],
        ["unique:region"],
    ]

    run_job(
        settings, "coverage_reset_job", {"ops": {"coverage_reset": {"config": {"confirm": True}}}}
    )
    assert before in CliRunner().invoke(app, ["score"]).output  # the measured figure, restored
