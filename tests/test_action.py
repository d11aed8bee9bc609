"""The DataHub Actions-framework action: ``act()`` on DataHub events modelled on DataHub's own
source and tests (no Kafka or GMS runs here; tests/modelled/datahub_events.json cites the files),
and its launch against a real ``dagster-webserver`` on 127.0.0.1."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from upstream_dagster import settings as settings_mod
from upstream_dagster.datahub.action import Launch, UpstreamAction, launch_for, run_stamp_from

from .servers import free_port, serve

ROOT = Path(__file__).resolve().parent.parent
EVENTS = json.loads((ROOT / "tests" / "modelled" / "datahub_events.json").read_text())
RUN_MS = 1795990600000  # the failing run's own timestampMillis (the sensor keys by it)


def _envelope(name: str) -> Any:
    from datahub_actions.event.event_envelope import EventEnvelope

    return EventEnvelope.from_json(
        json.dumps({k: v for k, v in EVENTS[name].items() if k != "_about"})
    )


def _run_events(query: str, variables: dict[str, Any]) -> dict[str, Any]:
    """DataHub's answer to the run-events query (assertions.graphql AssertionRunEventsResult)
    for the failing assertion: its run dbt-run-42 at RUN_MS."""
    (urn,) = variables["urns"]
    event = {"timestampMillis": RUN_MS, "runId": "dbt-run-42", "assertionUrn": urn,
             "asserteeUrn": EVENTS["assertion_failed"]["event"]["parameters"]["asserteeUrn"],
             "result": {"type": "FAILURE", "nativeResults": []}}  # fmt: skip
    return {"entities": [{"urn": urn, "runEvents": {"runEvents": [event]}}]}


class Recorder:
    def __init__(self) -> None:
        self.launches: list[Launch] = []

    def launch(self, launch: Launch) -> str:
        self.launches.append(launch)
        return f"run-{len(self.launches)}"


def _assertion_check(query: str, variables: dict[str, Any]) -> dict[str, Any]:
    """DataHub's answer to the assertion-info query, as tests/modelled/gms_exchanges.json
    models it (validated there against DataHub's schema), for the asked assertion."""
    assert "upstreamAssertionCheck" in query
    modelled = json.loads((ROOT / "tests" / "modelled" / "gms_exchanges.json").read_text())
    (exchange,) = modelled["assertion_check"]["exchanges"]
    data: dict[str, Any] = json.loads(json.dumps(exchange["response"]["data"]))
    data["assertion"]["urn"] = variables["urn"]
    return data


def test_modelled_oss_assertion_failure_launches_the_partition_the_sensor_would_open() -> None:
    """OSS puts the run's status in runResult (COMPLETE) and the outcome in assertionResult;
    the incident is keyed by the run's own time and the check's name, both read from DataHub,
    as the sensor keys it."""
    from upstream_dagster.datahub.action import check_of_from, run_stamp_from
    from upstream_dagster.datahub.incidents import incident_key
    from upstream_dagster.datahub.model import AssertionRun

    event = EVENTS["assertion_failed"]["event"]
    assert event["parameters"]["runResult"] == "COMPLETE"  # the shape this test is about
    recorder = Recorder()
    action = UpstreamAction(
        {},
        launcher=recorder,
        run_stamp=run_stamp_from(_run_events),
        check_of=check_of_from(_assertion_check),
    )
    action.act(_envelope("assertion_failed"))
    (launch,) = recorder.launches
    sensor_key = incident_key(
        AssertionRun(event["entityUrn"], event["parameters"]["asserteeUrn"], RUN_MS, ""),
        "not_null_fct_ledger_amount",  # what the sensor reads from assertionInfo for a dbt test
    )
    assert (launch.job, launch.partition) == ("reliability", sensor_key)
    assert launch.dataset == event["parameters"]["asserteeUrn"]
    assert action.launched == ["run-1"]


def test_modelled_cloud_documented_shape_is_read_too() -> None:
    launch = launch_for(
        "EntityChangeEvent_v1", EVENTS["assertion_failed_cloud_docs"]["event"], None
    )
    assert launch is not None and launch.job == "reliability"


def test_modelled_run_event_in_the_change_log_is_the_same_incident() -> None:
    stamp = run_stamp_from(_run_events)
    ece = launch_for("EntityChangeEvent_v1", EVENTS["assertion_failed"]["event"], None, stamp)
    mcl = launch_for(
        "MetadataChangeLogEvent_v1", EVENTS["run_event_failed_mcl"]["event"], "estate_refresh"
    )
    assert ece is not None and mcl is not None and ece.partition == mcl.partition


def test_modelled_change_event_without_datahub_keys_by_the_changes_own_time() -> None:
    """With no DataHub to ask (or one that does not answer), the change's time is the key."""
    event = EVENTS["assertion_failed"]["event"]
    alone = launch_for("EntityChangeEvent_v1", event, None)
    from upstream_dagster.datahub.incidents import parse_key

    assert alone is not None and alone.partition
    assert parse_key(alone.partition)[1] == event["auditStamp"]["time"]

    def down(query: str, variables: dict[str, Any]) -> dict[str, Any]:
        raise ConnectionError("DataHub is unreachable")

    again = launch_for("EntityChangeEvent_v1", event, None, run_stamp_from(down))
    assert again is not None and again.partition == alone.partition


def test_modelled_events_that_need_nothing_launch_nothing() -> None:
    recorder = Recorder()
    action = UpstreamAction({}, launcher=recorder)
    for name in ("assertion_passed", "column_added", "tag_added"):
        action.act(_envelope(name))
    assert recorder.launches == []


def test_modelled_breaking_schema_change_runs_the_checks_now() -> None:
    recorder = Recorder()
    UpstreamAction({}, launcher=recorder).act(_envelope("column_removed"))
    (launch,) = recorder.launches
    assert (launch.job, launch.partition) == ("estate_refresh", None)
    assert "REMOVE of rebate_amt" in launch.reason
    ignoring = Recorder()
    UpstreamAction({"refresh_job": None}, launcher=ignoring).act(_envelope("column_removed"))
    assert ignoring.launches == []


def test_modelled_failures_on_one_dataset_open_one_investigation_in_the_quiet_window() -> None:
    recorder = Recorder()
    action = UpstreamAction({"quiet_minutes": 10}, launcher=recorder)
    action.act(_envelope("assertion_failed"))
    action.act(_envelope("run_event_failed_mcl"))  # the same failure, seen twice
    assert len(recorder.launches) == 1


def test_action_without_a_dagster_url_says_what_to_set() -> None:
    from upstream_dagster.errors import UpstreamError

    with pytest.raises(UpstreamError, match="dagster_url"):
        UpstreamAction.create({}, None)


def test_pipeline_file_names_an_action_the_framework_can_load() -> None:
    import yaml
    from datahub_actions.action.action_registry import action_registry

    pipeline = yaml.safe_load((ROOT / "docs" / "deploy" / "datahub-action.yaml").read_text())
    assert action_registry.get(pipeline["action"]["type"]) is UpstreamAction
    assert set(pipeline["filter"]["event_type"]) == {
        "EntityChangeEvent_v1",
        "MetadataChangeLogEvent_v1",
    }


@pytest.mark.slow
def test_action_launches_the_reliability_job_on_a_real_dagster_webserver(
    estate: settings_mod.Settings,
) -> None:
    """The modelled failure, through ``act()``, becomes a queued run of the reliability job for
    the incident's partition on a real webserver; the same failure again launches nothing."""
    import dagster as dg

    from upstream_dagster.runs import dagster_instance

    instance = dagster_instance(estate)  # DAGSTER_HOME inside the copy of the estate
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    webserver = str(Path(sys.executable).with_name("dagster-webserver"))
    with serve(
        [webserver, "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
        f"{url}/server_info",
        estate.state_dir / "webserver.log",
        ROOT,
    ):
        action = UpstreamAction.create({"dagster_url": url}, None)
        action.act(_envelope("assertion_failed"))
        assert len(action.launched) == 1, (estate.state_dir / "webserver.log").read_text()[-2000:]
        run = instance.get_run_by_id(action.launched[0])
        assert run is not None and run.job_name == "reliability"
        key = launch_for("EntityChangeEvent_v1", EVENTS["assertion_failed"]["event"], None)
        assert key is not None and run.tags["dagster/partition"] == key.partition
        assert run.tags["upstream/trigger"] == "datahub-action"
        # queued for the daemon's run coordinator, as a sensor's run would be
        assert run.status in (dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED)
        assert key.partition in instance.get_dynamic_partitions("incidents")

        again = UpstreamAction.create({"dagster_url": url}, None)  # a restarted action
        again.act(_envelope("assertion_failed"))
        assert again.launched == []
        assert len(instance.get_run_records(dg.RunsFilter(job_name="reliability"))) == 1


@pytest.mark.slow
def test_loading_the_action_keeps_the_sdk_out_of_home_and_its_telemetry_off(
    tmp_path: Path,
) -> None:
    """The Actions framework imports this module first: that first SDK import must still keep
    ~/.datahub unwritten and telemetry off (an extra request to every GMS otherwise)."""
    import os
    import subprocess

    home = tmp_path / "home"
    home.mkdir()
    code = (
        "import upstream_dagster.datahub.action\n"
        "from datahub.telemetry.telemetry import telemetry_instance\n"
        "print(telemetry_instance.enabled)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "DATAHUB_TELEMETRY_ENABLED"}
    env.update(HOME=str(home), UPSTREAM_STATE_DIR=str(tmp_path / "state"))
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "False"
    assert not (home / ".datahub").exists()
