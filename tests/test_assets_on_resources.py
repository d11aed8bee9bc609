"""The assets run on resources, so a test hands them the DataHub of its choosing: here a small
generated estate in DataHub Lite (no dbt build), through `GivenGraph` in place of the `datahub`
resource. The score job's assets materialize on it with Dagster's own `materialize`."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
import yaml

from upstream_dagster.conformance.plan import Plan
from upstream_dagster.conformance.score import Dial
from upstream_dagster.datahub.lite import LiteGraph
from upstream_dagster.defs import conformance, coverage
from upstream_dagster.defs.resources import GivenGraph, UpstreamResource, WarehouseResource
from upstream_dagster.evaluation.bench.estate_gen import generate
from upstream_dagster.evaluation.bench.score import SPEC
from upstream_dagster.services import scoring

PINNED = "2026-11-29T06:00:00Z"


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("gen") / "lite.sqlite"
    generate(path, 60, seed=3)
    return path


def _upstream(tmp_path: Path) -> UpstreamResource:
    estate = tmp_path / "estate.yaml"
    estate.write_text(yaml.safe_dump(SPEC.model_dump(mode="json", exclude_defaults=True)))
    return UpstreamResource(
        state_dir=str(tmp_path / "state"),
        estate_file=str(estate),
        dbt_source_dir=str(tmp_path),  # not a git repository: no model-file authors
        project_root=str(tmp_path),
    )


@pytest.mark.slow
def test_the_score_assets_read_the_graph_they_are_handed(
    generated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UPSTREAM_CLOCK", PINNED)
    graph = LiteGraph(generated)
    try:
        result = dg.materialize(
            [*conformance.ASSETS, coverage.proposals, coverage.approval_queue],
            resources={
                "datahub": GivenGraph(graph),
                "upstream": _upstream(tmp_path),
                # a generated estate has no warehouse: no assertion is proposed on it
                "warehouse": WarehouseResource(path=str(tmp_path / "no-warehouse.duckdb")),
            },
            instance=dg.DagsterInstance.ephemeral(),
        )
        assert result.success
        assert graph.counter.calls > 0  # every read went through the graph the test gave
        dial: Dial = result.output_for_node("conformance")
        expected = scoring.read_and_score(graph, SPEC, dial.as_of_ms)
    finally:
        graph.close()
    assert dial.overall.checks > 0 and dial.overall == expected.overall
    meta = result.asset_materializations_for_node("conformance")[0].metadata
    assert meta["overall_percent"].value == expected.overall.percent
    slices = result.asset_materializations_for_node("metadata_context")[0].metadata
    assert slices["transport"].value == "lite" and slices["datasets"].value == 60
    batch: Plan = result.output_for_node("proposals")
    assert batch.base.overall == dial.overall
    queue = result.asset_materializations_for_node("approval_queue")[0].metadata
    assert queue["waiting"].value == (1 if batch.proposals else 0)
    assert not [p for p in batch.proposals if p.change.kind == "add_assertions"]
    # the reviewer reads a table narrow enough for the UI's value column (two columns), the
    # biggest gain first; the rows in full are data for `upstream approve`
    meta = result.asset_materializations_for_node("proposals")[0].metadata
    shown = meta["batch_table"]
    assert isinstance(shown, dg.TableMetadataValue) and shown.schema is not None
    assert [c.name for c in shown.schema.columns] == ["gain", "proposal"]
    gains = [float(r.data["gain"]) for r in shown.records]
    assert len(gains) == len(batch.proposals) and gains == sorted(gains, reverse=True)
    full = meta["batch_records"].value
    assert isinstance(full, list) and [r["id"] for r in full] == [p.id for p in batch.by_gain()]
    assert all("fixes" in r["price"] for r in full)
    assert all(
        r.data["proposal"].endswith(p.id)
        for r, p in zip(shown.records, batch.by_gain(), strict=True)
    )
    ranked = result.asset_materializations_for_node("violations")[0].metadata["violations_table"]
    assert isinstance(ranked, dg.TableMetadataValue) and ranked.records
    assert all(" (" in r.data["asset"] for r in ranked.records)  # name and platform


def test_a_bad_estate_file_fails_the_spec_asset_with_its_line_and_fix(
    generated: Path, tmp_path: Path
) -> None:
    upstream = _upstream(tmp_path)
    Path(upstream.estate_file).write_text("tiers:\n  - name: t\n    requre_owner: true\n")
    graph = LiteGraph(generated)
    try:
        result = dg.materialize(
            [conformance.estate_spec],
            resources={"datahub": GivenGraph(graph), "upstream": upstream},
            raise_on_error=False,
        )
    finally:
        graph.close()
    assert not result.success
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    message = str(failure.step_failure_data.error)
    assert "estate.yaml:3" in message and "fix:" in message
