"""The reliability controller end to end on the real parts: a scenario breaks the DuckDB
warehouse, dbt rebuilds it through Dagster, DataHub's dbt source re-ingests it into DataHub
Lite, the sensor turns the failing assertion into an incident partition, and the reliability
job names the cause, and the approved fix resolves the incident. The graded cases (every
scenario, recurrence and abstention) are the evaluation's: tests/test_eval.py replays their
records and runs a live subset."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from upstream_dagster import settings as settings_mod
from upstream_dagster.errors import UpstreamError
from upstream_dagster.evaluation import approve, graded, investigate_failing, run_scenario
from upstream_dagster.reliability.scenario import load_scenario
from upstream_dagster.scenarios import break_estate

ROOT = Path(__file__).resolve().parent.parent


def _aspect(graph: object, urn: str, aspect: str) -> dict | None:
    return graph.get_aspects([urn], [aspect]).get(urn, {}).get(aspect)  # type: ignore[attr-defined]


def test_vendor_drift_from_sensor_to_resolved_incident(estate: settings_mod.Settings) -> None:
    from upstream_dagster.datahub import open_graph
    from upstream_dagster.datahub.scribe import ROOT_TAG, incident_urn
    from upstream_dagster.definitions import build
    from upstream_dagster.defs.reliability import waiting_incidents
    from upstream_dagster.runtime import dagster_instance

    break_estate(estate, load_scenario(ROOT / "scenarios/vendor_drift.yaml"))
    defs = build(estate)
    sensor = defs.resolve_sensor_def("failing_assertions")
    instance = dagster_instance(estate)
    with dg.build_sensor_context(instance=instance, definitions=defs) as ctx:
        result = sensor(ctx)
        assert len(result.run_requests) == 1
        (request,) = result.run_requests
        assert request.run_key == request.partition_key  # assertion id @ event time
        instance.add_dynamic_partitions("incidents", [request.partition_key])
        ctx.update_cursor(result.cursor)
        again = sensor(ctx)
        assert again.run_requests == []  # a second tick launches nothing new

    (outcome,) = investigate_failing(estate)
    v = outcome.verdict
    assert outcome.key == request.partition_key
    assert v.concluded and v.cause.endswith("vendor.discounts,PROD)") and v.column == "discount_amt"
    assert v.failure_class == "rename" and v.confidence >= v.min_confidence
    assert v.simulation[:2] == (True, True)  # the patch was verified in a sandbox rebuild
    assert "upstream_renamed_column" in v.remedy.diff
    assert (ROOT / "dbt_demo/models/staging/stg_vendor_discounts.sql").read_text().count(
        "upstream_renamed_column"
    ) == 0

    waiting = waiting_incidents(instance, estate)  # the one approval queue lists it
    assert any(outcome.key in line and v.digest in line for line in waiting), waiting
    with pytest.raises(UpstreamError, match="not an approver"):
        approve(estate, outcome, "mallory")
    done = approve(estate, outcome, "alice")
    assert not any(outcome.key in line for line in waiting_incidents(instance, estate))
    meta = done.asset_materializations_for_node("incident_writeback")[0].metadata
    assert meta["resolved"].value is True, meta["check_after_fix"].value
    with pytest.raises(UpstreamError, match="already written"):
        approve(estate, outcome, "alice")  # at most once

    graph = open_graph(estate)
    try:
        incident = _aspect(graph, incident_urn(outcome.key), "incidentInfo")
        assert incident and incident["status"]["state"] == "RESOLVED"
        assert "[E" in incident["description"] and incident["entities"] == [v.symptom]
        runbook = _aspect(graph, v.cause, "institutionalMemory")
        assert runbook and "rename" in runbook["elements"][0]["description"]
        assert incident_urn(outcome.key) in runbook["elements"][0]["description"]
        for urn in (v.cause, v.symptom):
            props = _aspect(graph, urn, "structuredProperties")["properties"]
            names = {p["propertyUrn"].rsplit(":", 1)[-1] for p in props}
            assert {"lastRootCause", "knownFailureModes", "fragilityScore", "mttrMinutes"} <= names
        guards = [u for u in graph.search_prefix("urn:li:assertion:upstream-guard-")]
        assert len(guards) == 2
        fields = _aspect(graph, v.cause, "editableSchemaMetadata")["editableSchemaFieldInfo"]
        root = next(f for f in fields if f["fieldPath"] == v.column)
        assert ROOT_TAG in {t["tag"] for t in root["globalTags"]["tags"]}
    finally:
        graph.close()
    from upstream_dagster.cli import run_job

    scored = run_job(estate, "score").asset_materializations_for_node("conformance")[0].metadata
    assert (scored["incidents_active"].value, scored["incidents_resolved"].value) == (0, 1)
    patched = estate.dbt_project_dir / "models/staging/stg_vendor_discounts.sql"
    assert "upstream_renamed_column" in patched.read_text()  # the deployed copy only


def test_a_rename_the_demo_never_ships_is_found_and_patched_all_the_same(
    estate: settings_mod.Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Another feed, another column, another mart, a monitor written for this test only."""
    spec = (ROOT / "estate.yaml").read_text() + (
        "  - name: freight_not_zero\n"
        "    rule: zero_values\n"
        "    match:\n"
        '      - names: ["*shipping_sla"]\n'
        "    columns: [shipping_cost]\n"
    )
    (tmp_path / "estate.yaml").write_text(spec)
    monkeypatch.setenv("UPSTREAM_ESTATE", str(tmp_path / "estate.yaml"))
    settings = settings_mod.load()
    scenario = tmp_path / "carrier_rename.yaml"
    scenario.write_text(
        "faults:\n"
        "  - {kind: rename_column, relation: vendor.shipments, column: shipping_cost, "
        "to: freight_cost_eur}\n"
        "expect:\n"
        "  symptom: marts.agg_shipping_sla\n"
        "  root_cause: {dataset: vendor.shipments, column: shipping_cost}\n"
    )
    case = load_scenario(scenario)
    outcomes = run_scenario(settings, case, "alice")
    grades = [graded(case, o) for o in outcomes]
    assert "correct" in grades and "wrong" not in grades, [o.verdict.headline() for o in outcomes]
    v = next(o.verdict for o in outcomes if graded(case, o) == "correct")
    assert "stg_vendor_shipments.sql" in v.remedy.diff and "freight_cost_eur" in v.remedy.diff
    assert v.simulation[:2] == (True, True)
