"""Every GraphQL document Upstream (and the SDK for it) sends, against the schema of every
release 1.0-1.7 it is sent to, with the version gates in one place (`gms/versions.py`); and the
check-name read of the DataHub Action, on each release, naming a failing check exactly as the
polling sensor does. The exchanges here are modelled (tests/modelled/); none were recorded."""

from __future__ import annotations

from typing import Any

import pytest

from upstream_dagster.datahub.gms import versions
from upstream_dagster.evaluation.capture import LEDGER

from .modelled.graphql_model import entity_type
from .modelled.releases import ALL, schema
from .modelled.server import HOST, install
from .test_gms_modelled import EXCHANGES, _documents


def _release(name: str) -> versions.Version:
    major, minor = name.split(".")
    return (int(major), int(minor), 0)


def test_every_release_from_1_0_to_1_7_has_its_schema_kept() -> None:
    assert ALL == ("1.0", "1.1", "1.2", "1.3", "1.4", "1.5", "1.6", "1.7")
    assert tuple(_release(n) for n in ALL) == versions.RELEASES


@pytest.mark.slow
@pytest.mark.parametrize("release", ALL)
def test_every_graphql_document_validates_against_each_release_it_is_sent_to(release: str) -> None:
    """A document goes to a release only where it validates; and every gate is needed: below
    it, the release's schema refuses the document (so the gate cannot be dropped)."""
    import graphql

    for name, document in _documents().items():
        errors = graphql.validate(schema(release), graphql.parse(document))
        if versions.sends_graphql(_release(release), name):
            assert errors == [], (release, name, errors)
        else:
            assert errors, f"{name} is held back from {release}, which would accept it"


def _graphql_exchanges() -> list[tuple[str, dict[str, Any]]]:
    return [
        (name, exchange)
        for name, fixture in EXCHANGES.items()
        if not name.startswith("_")
        for exchange in fixture["exchanges"]
        if "operation" in exchange
    ]


@pytest.mark.slow  # each release's GraphQL schema parsed: about a second each
@pytest.mark.parametrize("release", ALL)
def test_every_modelled_exchange_is_valid_on_each_release_it_goes_to(release: str) -> None:
    """The variables each modelled exchange sends coerce, and its answer has the shape the
    release produces, on every release the operation is sent to."""
    import graphql
    from graphql.execution.values import get_variable_values

    docs = _documents()
    for name, exchange in _graphql_exchanges():
        op = exchange["operation"]
        if not versions.sends_graphql(_release(release), op):
            continue
        (definition,) = graphql.parse(docs[op]).definitions
        coerced = get_variable_values(
            schema(release), definition.variable_definitions, exchange["expect_variables"]
        )
        assert not isinstance(coerced, list), f"{release} {name}: {op}: {coerced}"
        response = exchange["response"]
        if "errors" in response or exchange.get("status", 200) != 200:
            continue
        done = graphql.execute_sync(
            schema(release),
            graphql.parse(docs[op]),
            root_value=response["data"],
            variable_values=exchange["expect_variables"],
            type_resolver=entity_type,
        )
        assert done.errors is None and done.data == response["data"], (release, name)


DBT_TEST = "urn:li:assertion:a1"
MONITOR = "urn:li:assertion:upstream-monitor-1"
FIELD = f"urn:li:schemaField:({LEDGER},amount)"


@pytest.mark.slow  # each release's GraphQL schema parsed: about a second each
@pytest.mark.parametrize("release", ["1.0", "1.3", "1.4", "1.6", "1.7"])
def test_modelled_the_action_names_a_check_as_the_sensor_does_on_every_release(
    release: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dbt test and an Upstream monitor, failing: the Action's partition key (the check named
    through the form its release answers) is the sensor's, so one failure is one incident."""
    from datahub.ingestion.graph.client import DatahubClientConfig, DataHubGraph

    from upstream_dagster.datahub.action import launch_for
    from upstream_dagster.datahub.action_reads import check_of_from, check_of_graph
    from upstream_dagster.datahub.gms import GmsGraph
    from upstream_dagster.datahub.incidents import named
    from upstream_dagster.datahub.model import AssertionRun

    server = install(monkeypatch, release)
    dbt = {
        "type": "CUSTOM",
        "customProperties": {"dbt_unique_id": "test.acme.not_null_amount.5a"},
        "customAssertion": {"type": "dbt", "entity": LEDGER, "field": FIELD},
    }
    monitor = {
        "type": "CUSTOM",
        "description": "NULL share of amount",
        "customProperties": {"upstream_monitor": "null_share"},
        "customAssertion": {"type": "Upstream monitor", "entity": LEDGER, "field": FIELD},
    }
    server.seed(DBT_TEST, "assertionInfo", dbt)
    server.seed(MONITOR, "assertionInfo", monitor)
    runs = [AssertionRun(a, LEDGER, 1795990600000, "FAILURE", "r1") for a in (DBT_TEST, MONITOR)]
    sensor = named(GmsGraph(HOST), runs)  # incident key -> check, as the sensor opens them
    assert sorted(sensor.values()) == ["not_null_amount", "null_share.amount"]

    framework = DataHubGraph(DatahubClientConfig(server=HOST))  # what the Action is given
    check_of = check_of_graph(framework)
    for run in runs:
        event = {"entityType": "assertion", "category": "RUN", "operation": "COMPLETED",
                 "entityUrn": run.assertion_urn, "auditStamp": {"time": run.timestamp_ms},
                 "parameters": {"assertionResult": "FAILURE", "asserteeUrn": LEDGER}}  # fmt: skip
        launch = launch_for("EntityChangeEvent_v1", event, None, None, check_of)
        assert launch is not None and launch.partition in sensor, (release, launch)
    asked = [s["query"] for s in server.sent if s["kind"] == "graphql"]
    if release == "1.7":
        assert asked and all("upstreamAssertionCheck" in q for q in asked)
    else:  # the 1.7 query would be refused whole, and the check would go unnamed
        assert not asked
        assert check_of_from(framework.execute_graphql)(DBT_TEST) == ""
