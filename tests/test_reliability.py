"""The reliability controller end to end on the real parts: a scenario breaks the DuckDB
warehouse, dbt rebuilds it through Dagster, DataHub's dbt source re-ingests it into DataHub
Lite, the sensor turns the failing assertion into an incident partition, and the reliability
job names the cause, and the approved fix resolves the incident. The graded cases (every
scenario, recurrence and abstention) are the evaluation's: tests/test_eval.py replays their
records and runs a live subset."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from upstream_dagster import settings as settings_mod
from upstream_dagster.defs.remediation import DRIVER_TAG, INCIDENT_TAG
from upstream_dagster.errors import UpstreamError
from upstream_dagster.evaluation.breakage import break_estate
from upstream_dagster.evaluation.runner import approve, investigate_failing
from upstream_dagster.evaluation.scenario import load_scenario
from upstream_dagster.runs import reset

ROOT = Path(__file__).resolve().parent.parent


def _aspect(graph: object, urn: str, aspect: str) -> dict | None:
    return graph.get_aspects([urn], [aspect]).get(urn, {}).get(aspect)  # type: ignore[attr-defined]


def test_every_sensor_that_hands_a_run_on_looks_within_seconds() -> None:
    """A reviewer who approved a fix in the UI sits through each hand-off (fix applied ->
    rebuild -> incident resolved; a failed build -> its investigation): every sensor of the
    code location that reacts to a run's outcome looks every HANDOFF_SECONDS, not at Dagster's
    default of 30 s, and a new one added without it fails here."""
    import importlib
    import pkgutil

    import upstream_dagster.defs as defs_pkg
    from upstream_dagster.defs.launch import HANDOFF_SECONDS

    found: dict[str, int | None] = {}
    for module in pkgutil.iter_modules(defs_pkg.__path__):
        area = importlib.import_module(f"upstream_dagster.defs.{module.name}")
        defs = getattr(area, "defs", None)
        for sensor in getattr(defs, "sensors", None) or ():
            if isinstance(sensor, dg.RunStatusSensorDefinition):
                found[sensor.name] = sensor.minimum_interval_seconds
    assert {"failed_builds", "incident_fix_rebuilds", "incident_rebuilt_resolves"} <= set(found)
    assert HANDOFF_SECONDS <= 10
    assert found == dict.fromkeys(found, HANDOFF_SECONDS)


def test_vendor_drift_from_sensor_to_resolved_incident(estate: settings_mod.Settings) -> None:
    from urllib.parse import quote

    from upstream_dagster.datahub import open_graph
    from upstream_dagster.datahub.incidents import short_id
    from upstream_dagster.datahub.scribe import ROOT_TAG, document_urn, incident_urn
    from upstream_dagster.definitions import build
    from upstream_dagster.defs.journal import waiting_incidents
    from upstream_dagster.runs import dagster_instance, gate_store

    break_estate(estate, load_scenario(ROOT / "scenarios/vendor_drift.yaml"))
    defs = build(estate)
    sensor = defs.resolve_sensor_def("failing_assertions")
    instance = dagster_instance(estate)
    with dg.build_sensor_context(
        instance=instance, definitions=defs, resources=defs.resources
    ) as ctx:
        result = sensor(ctx)
        assert len(result.run_requests) == 1
        (request,) = result.run_requests
        assert request.run_key == request.partition_key
        # the partition names the dataset and the time; the run names the check
        dataset_part = request.partition_key.split("@")[0]
        assert "." in dataset_part and "urn:" not in dataset_part
        assert "T" in request.partition_key.split("@")[1] and "Z~" in request.partition_key
        check = request.tags["upstream/check"]
        assert check and " " not in check and f":{check}@" in request.partition_key
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

    # the terminal shows the whole analysis a reviewer approves, not only a key and a number
    shown = _cli("show", outcome.key)
    for part in (
        "Why Upstream believes it",
        "Confidence:",
        "Evidence ledger",
        "upstream_renamed_column",  # the patch diff
        f"upstream approve --incident {short_id(outcome.key)}",  # by its short id
    ):
        assert part in shown, part

    # piped to a file, nothing is cut: the patch's added line is whole, however long
    (added,) = [line for line in v.remedy.diff.splitlines() if "feed, upstream_renamed_col" in line]
    assert len(added) > 100 and added in shown.splitlines()
    # an incident has a short id, taken wherever a key is; `upstream incidents` lists them
    ident = short_id(outcome.key)
    listed = _cli("incidents")
    (row,) = [line for line in listed.splitlines() if line.strip().startswith(ident)]
    assert "agg_daily_revenue (dbt)" in row and "open: fix awaits approval" in row, listed
    assert "1.00" in row and "alice" in row and "urn:li" not in row  # confidence, owner
    assert _cli("show", ident[:4]) == _cli("show", "latest") == shown
    # the failing check in Dagster links to its incident: one click from the red check
    failing = _failing_check(estate, instance)
    assert failing.metadata["incident_id"].value == ident
    assert quote(outcome.key, safe="") in str(failing.metadata["incident"].value)
    assert not failing.passed and ident in (failing.description or "")

    waiting = waiting_incidents(instance, gate_store(estate))  # the one approval queue lists it
    assert any(outcome.key in line and v.digest in line for line in waiting), waiting
    with pytest.raises(UpstreamError, match="not an approver"):
        approve(estate, outcome, "mallory")
    done = approve(estate, outcome, "alice")
    # the runs say who launched them and why; the resolution links the fix's run and times it
    fix_run = instance.get_run_by_id(done.runs[0])
    assert fix_run is not None
    assert fix_run.tags["upstream/launched-by"] == "cli" and fix_run.tags["upstream/cli-user"]
    assert (fix_run.tags["upstream/reviewer"], fix_run.tags["upstream/gate"]) == ("alice", "write")
    resolved = instance.get_latest_materialization_event(dg.AssetKey("incident_resolution"))
    assert resolved is not None and resolved.asset_materialization is not None
    meta = resolved.asset_materialization.metadata
    assert meta["fixed_by_run"] == dg.MetadataValue.dagster_run(fix_run.run_id)
    assert float(str(meta["time_to_resolve_minutes"].value)) >= 0
    assert "resolved in" in next(
        line for line in _cli("incidents").splitlines() if line.strip().startswith(ident)
    )
    assert not any(outcome.key in line for line in waiting_incidents(instance, gate_store(estate)))
    assert done.resolved is True, done.check_after_fix
    with pytest.raises(UpstreamError, match="already written"):
        approve(estate, outcome, "alice")  # at most once

    graph = open_graph(estate)
    try:
        incident = _aspect(graph, incident_urn(outcome.key), "incidentInfo")
        assert incident and incident["status"]["state"] == "RESOLVED"
        assert "[E" in incident["description"] and incident["entities"] == [v.symptom]
        # the post-mortem is a DataHub Document, related to the symptom, cause and impact
        post = _aspect(graph, document_urn(outcome.key), "documentInfo")
        assert post and post["title"].startswith("Post-mortem:")
        related = {r["asset"] for r in post["relatedAssets"]}
        assert {v.symptom, v.cause} <= related
        assert "approved by alice" in post["contents"]["text"] and "[E" in post["contents"]["text"]
        runbook = _aspect(graph, v.cause, "institutionalMemory")
        assert runbook and "rename" in runbook["elements"][0]["description"]
        assert quote(document_urn(outcome.key), safe="") in runbook["elements"][0]["url"]
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
    from upstream_dagster.runs import run_job

    scored = run_job(estate, "score").asset_materializations_for_node("conformance")[0].metadata
    assert (scored["incidents_active"].value, scored["incidents_resolved"].value) == (0, 1)
    patched = estate.dbt_project_dir / "models/staging/stg_vendor_discounts.sql"
    assert "upstream_renamed_column" in patched.read_text()  # the deployed copy only

    # In the UI the same three runs follow one another through two run-status sensors (the
    # command line's chain is tagged, and they leave it alone): a fix that needs a rebuild asks
    # for estate_refresh tagged with the incident, and that rebuild asks for the resolution.
    fix_run, rebuild_run, _ = (instance.get_run_by_id(r) for r in done.runs)
    assert fix_run and rebuild_run and rebuild_run.tags[INCIDENT_TAG] == outcome.key
    assert isinstance(_chained(defs, "incident_fix_rebuilds", instance, fix_run), dg.SkipReason)
    request = _chained(defs, "incident_fix_rebuilds", instance, _from_the_ui(fix_run))
    assert request.job_name == "estate_refresh" and request.tags[INCIDENT_TAG] == outcome.key
    request = _chained(defs, "incident_rebuilt_resolves", instance, _from_the_ui(rebuild_run))
    assert request.partition_key == outcome.key

    # Undo covers an incident's write-back like a batch: every aspect it wrote is restored
    reset(estate)
    graph = open_graph(estate)
    try:
        assert not graph.search_prefix("urn:li:assertion:upstream-guard-")
        assert _aspect(graph, v.cause, "institutionalMemory") is None
        assert _aspect(graph, document_urn(outcome.key), "documentInfo") is None
        incident = _aspect(graph, incident_urn(outcome.key), "incidentInfo")
        assert incident and incident["status"]["state"] == "ACTIVE"  # as the verdict raised it
    finally:
        graph.close()


def _cli(*args: str) -> str:
    import os
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "upstream_dagster.cli", *args],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _failing_check(estate: settings_mod.Settings, instance: dg.DagsterInstance) -> Any:
    """The latest result of the estate.yaml monitor that failed (revenue_not_zero)."""
    from upstream_dagster.definitions import build

    graph = build(estate).resolve_asset_graph()
    (key,) = [
        k
        for k in graph.asset_check_keys
        if k.name == "monitor_revenue_not_zero" and k.asset_key.path[-1] == "agg_daily_revenue"
    ]
    record = instance.get_latest_asset_check_evaluation_record(key)
    assert record is not None and record.evaluation is not None
    return record.evaluation


def _from_the_ui(run: dg.DagsterRun) -> dg.DagsterRun:
    """The same run as if a person had launched it from the UI (no command-line chain tag)."""
    return run._replace(tags={k: v for k, v in run.tags.items() if k != DRIVER_TAG})


def _chained(
    defs: dg.Definitions, name: str, instance: dg.DagsterInstance, run: dg.DagsterRun
) -> Any:
    """What a run-status sensor asks for when ``run`` succeeds (Dagster's documented way:
    the sensor called with a context built from the run and its success event)."""
    (success,) = [
        e.dagster_event
        for e in instance.all_logs(run.run_id)
        if e.dagster_event and e.dagster_event.event_type_value == "PIPELINE_SUCCESS"
    ]
    context = dg.build_run_status_sensor_context(
        sensor_name=name, dagster_event=success, dagster_instance=instance, dagster_run=run
    )
    return defs.resolve_sensor_def(name)(context)


def test_a_build_that_fails_opens_an_incident_whose_patch_makes_it_build_again(
    estate: settings_mod.Settings,
) -> None:
    """The loud failure: a feed renames a column a model names outright, and dbt cannot build
    the model. The refresh still tells DataHub (a failing build check carrying dbt's error),
    the failed_builds sensor opens the incident from the failed run, the investigation reads
    the error and the feed's timeline, and the approved patch makes the model build again."""
    from upstream_dagster.datahub.signals import is_build_check
    from upstream_dagster.definitions import build
    from upstream_dagster.runs import dagster_instance

    report = break_estate(estate, load_scenario(ROOT / "scenarios/loud_rename.yaml"))
    assert report.build_failed
    defs = build(estate)
    instance = dagster_instance(estate)
    run = instance.get_run_by_id(report.run_id)
    assert run is not None and run.status == dg.DagsterRunStatus.FAILURE
    (failure,) = [
        e.dagster_event
        for e in instance.all_logs(run.run_id)
        if e.dagster_event and e.dagster_event.event_type_value == "PIPELINE_FAILURE"
    ]
    context = dg.build_run_status_sensor_context(
        sensor_name="failed_builds",
        dagster_event=failure,
        dagster_instance=instance,
        dagster_run=run,
        resources=defs.resources,
    ).for_run_failure()
    (request,) = list(defs.resolve_sensor_def("failed_builds")(context))
    assert request.partition_key in instance.get_dynamic_partitions("incidents")
    with dg.build_sensor_context(
        instance=instance, definitions=defs, resources=defs.resources
    ) as ctx:  # the build's incident is not opened twice by the assertion sensor
        polled = defs.resolve_sensor_def("failing_assertions")(ctx)
        assert all(r.partition_key != request.partition_key for r in polled.run_requests)

    (outcome,) = investigate_failing(estate)
    v = outcome.verdict
    assert outcome.key == request.partition_key
    assert is_build_check(v.check.assertion) and v.symptom.endswith("staging.stg_orders,PROD)")
    assert v.concluded and v.cause.endswith("shop.orders,PROD)") and v.column == "promo_code"
    assert v.failure_class == "rename"
    claims = " ".join(e.claim for e in v.ledger)
    assert "promotion_code" in claims and "names promo_code" in claims  # dbt's error, cited
    assert v.simulation[:2] == (True, True)  # the patched model builds in the sandbox
    done = approve(estate, outcome, "alice")
    assert done.resolved is True, done.check_after_fix
