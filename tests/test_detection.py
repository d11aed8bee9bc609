"""Detection coverage as a requirement, without the warehouse: what estate.yaml accepts and
refuses, the draw (same seed, same faults), and what the dial says before and after a
measurement. The sandbox runs with the real parts in test_detection_estate.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from upstream_dagster.conformance import detection
from upstream_dagster.conformance.context import AssetFacts, FaultTrial, MetadataContext
from upstream_dagster.conformance.score import render, render_markdown, score
from upstream_dagster.conformance.tiers import Scope
from upstream_dagster.evaluation.detect_draw import draw, targets
from upstream_dagster.evaluation.estate_model import Estate
from upstream_dagster.spec import SpecError, load_estate
from upstream_dagster.spec.models import DetectionPolicy, EstateSpec

FCT = "urn:li:dataset:(urn:li:dataPlatform:dbt,shop.marts.fct_orders,PROD)"
DIM = "urn:li:dataset:(urn:li:dataPlatform:dbt,shop.marts.dim_customers,PROD)"

TIER = """version: 1
tiers:
  - name: gold
    match:
      - names: ["fct_*", "dim_*"]
    requirements:
      require_owner: true
      min_fault_detection: {share}
"""


def _spec(tmp_path: Path, share: str = "0.8", extra: str = "") -> EstateSpec:
    path = tmp_path / "estate.yaml"
    path.write_text(TIER.format(share=share) + extra)
    return load_estate(path)


@pytest.mark.parametrize(
    ("share", "extra", "named", "fix"),
    [
        ("80", "", "not a percentage: write 0.8 for 80%", "change the value"),
        ("-0.5", "", "more than 0 and at most 1", "change the value"),
        ("lots", "", "min_fault_detection", "a value of the expected type"),
        ("0.8", "policies:\n  detection:\n    faults_per_tier: 0\n", "faults_per_tier", "change"),
        ("0.8", "policies:\n  detection:\n    max_seconds: 0\n", "max_seconds", "change"),
        ("0.8", "policies:\n  detection:\n    faults: 5\n", "unknown key 'faults'", "faults_per"),
    ],
)
def test_a_bad_detection_setting_names_the_line_the_problem_and_the_fix(
    tmp_path: Path, share: str, extra: str, named: str, fix: str
) -> None:
    with pytest.raises(SpecError) as err:
        _spec(tmp_path, share, extra)
    assert named in err.value.problem
    assert str(tmp_path / "estate.yaml") + ":" in err.value.problem  # file:line
    assert fix in err.value.fix


def test_detection_settings_load_with_defaults(tmp_path: Path) -> None:
    spec = _spec(tmp_path, extra="policies:\n  detection:\n    seed: 7\n")
    assert spec.tiers[0].requirements.min_fault_detection == 0.8
    assert "min_fault_detection" in spec.tiers[0].requirements.active()
    assert spec.policies.detection == DetectionPolicy(seed=7)


def _estate() -> Estate:
    dated = [("order_id", "INTEGER"), ("amount", "DOUBLE"), ("ordered_at", "TIMESTAMP")]
    return Estate(
        relations={
            "raw.orders": dated,
            "staging.stg_orders": dated,
            "marts.fct_orders": dated,
            "marts.dim_customers": [("customer_id", "INTEGER"), ("region", "VARCHAR")],
            "raw.customers": [("customer_id", "INTEGER"), ("region", "VARCHAR")],
        },
        models={"staging.stg_orders", "marts.fct_orders", "marts.dim_customers"},
        downstream={
            "raw.orders": {"staging.stg_orders"},
            "staging.stg_orders": {"marts.fct_orders"},
            "raw.customers": {"marts.dim_customers"},
        },
        checked={"marts.fct_orders"},
        categories={"marts.dim_customers": {"region": ["east", "west"]}},
    )


SCOPE = Scope(((DIM, "gold"), (FCT, "gold")), (), ())


def test_the_same_seed_draws_the_same_faults_on_the_tiers_assets_and_their_feeds(
    tmp_path: Path,
) -> None:
    spec = _spec(tmp_path)
    policy = DetectionPolicy(seed=11, faults_per_tier=12)
    first = draw(_estate(), spec, SCOPE, policy)
    assert first == draw(_estate(), spec, SCOPE, policy)
    assert len(first) == 12
    assert first != draw(_estate(), spec, SCOPE, DetectionPolicy(seed=12, faults_per_tier=12))
    feeds = {FCT: set(targets(_estate(), "marts.fct_orders")), DIM: {"marts.dim_customers"}}
    feeds[DIM] |= {"raw.customers"}
    assert feeds[FCT] == {"raw.orders", "staging.stg_orders", "marts.fct_orders"}
    for p in first:  # each fault is on the asset it is counted for, or one of its feeds
        assert p.fault.table in feeds[p.asset], p
    assert {p.asset for p in first} == {FCT, DIM}  # the tier's assets taken in turn


def _ctx() -> MetadataContext:
    owner = ("urn:li:corpuser:alice",)
    return MetadataContext(0, "test", (AssetFacts(FCT, owners=owner), AssetFacts(DIM)))


def _measured(policy: DetectionPolicy) -> detection.Detection:
    trials = (
        FaultTrial("null_column on marts.fct_orders.amount (30% of rows)", "marts.fct_orders",
                   "null_column", ("dbt test not_null_fct_orders_amount",)),
        FaultTrial("scale_values on raw.orders.amount (x0.01)", "raw.orders", "scale_values"),
    )  # fmt: skip
    return detection.Detection(1, policy, ((DIM, ()), (FCT, trials)))


def test_until_measured_the_requirement_reads_not_measured_with_the_command(
    tmp_path: Path,
) -> None:
    spec = _spec(tmp_path)
    dial = score(_ctx(), spec, SCOPE, 0)
    rows = [r for r in dial.results if r.requirement == "min_fault_detection"]
    assert {r.status for r in rows} == {"not_evaluable"}  # never a silent zero or pass
    assert all("run `upstream detect`" in r.reason for r in rows)
    assert "not measured on 2 asset(s): run `upstream detect`" in render(dial)


def test_a_measured_tier_shows_the_faults_that_slipped_through_per_asset(
    tmp_path: Path,
) -> None:
    spec = _spec(tmp_path)
    ctx = detection.with_detection(_ctx(), _measured(spec.policies.detection), spec)
    dial = score(ctx, spec, SCOPE, 0)
    fct = next(r for r in dial.results if r.asset == FCT and r.requirement.endswith("detection"))
    assert fct.status == "fail"
    assert "caught 1 of 2 faults (50%, needs 80%)" in fct.reason
    text = render(dial)
    assert "shop.marts.fct_orders (gold): fail" in text
    assert "    missed: scale_values on raw.orders.amount (x0.01)" in text
    dim = next(r for r in dial.results if r.asset == DIM and r.requirement.endswith("detection"))
    assert dim.status == "not_evaluable" and "no fault" in dim.reason
    assert "| scale_values on raw.orders.amount (x0.01) |" in render_markdown(dial)
    assert detection.caught_share(dial.results) == 0.5


def test_a_measurement_made_with_another_seed_reads_as_not_measured(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    other = _measured(DetectionPolicy(seed=99))
    dial = score(detection.with_detection(_ctx(), other, spec), spec, SCOPE, 0)
    rows = [r for r in dial.results if r.requirement == "min_fault_detection"]
    assert all("not measured" in r.reason for r in rows)


def test_the_measurement_is_kept_and_read_back_whole(tmp_path: Path) -> None:
    found = _measured(DetectionPolicy(seed=5))
    detection.save(tmp_path, found)
    assert detection.load(tmp_path) == found
    assert detection.load(tmp_path / "elsewhere") is None
    (tmp_path / detection.FILE).write_text("{}")
    with pytest.raises(detection.UpstreamError, match="upstream detect"):
        detection.load(tmp_path)


def test_a_catch_by_an_assertion_upstream_wrote_on_another_asset_counts_while_it_exists(
    tmp_path: Path,
) -> None:
    """A fault on the fact table was caught by a range assertion a detection proposal wrote
    on the dimension: the catch counts while DataHub holds that assertion, and `reset` (which
    removes it) takes the catch away, as it does for the asset's own."""
    from dataclasses import replace

    from upstream_dagster.conformance.context import AssertionFact
    from upstream_dagster.conformance.requirements import assertion_urn

    spec = _spec(tmp_path)
    template = "in_range:lifetime_value=0..9000"
    by = (f"assertion {template} on marts.dim_customers",)
    caught = FaultTrial("scale_values on marts.fct_orders.amount", "marts.fct_orders", "x", by)
    found = detection.Detection(1, spec.policies.detection, ((FCT, (caught,)),))
    written = AssetFacts(DIM, assertions=(AssertionFact(assertion_urn(DIM, template), "CUSTOM"),))
    holding = replace(_ctx(), assets=(_ctx().assets[0], written))

    def fct(ctx: MetadataContext) -> str:
        dial = score(detection.with_detection(ctx, found, spec), spec, SCOPE, 0)
        (row,) = [r for r in dial.results if r.requirement == "min_fault_detection"
                  and r.asset == FCT]  # fmt: skip
        return row.reason

    assert "caught 1 of 1" in fct(holding)
    assert "caught 0 of 1" in fct(_ctx())  # after reset: the assertion is gone
