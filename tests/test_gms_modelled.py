"""The `gms` backend against HTTP exchanges modelled on DataHub's own server source and tests
(no DataHub server can run here): tests/modelled/gms_exchanges.json, each fixture citing the
files its shapes come from. ``UPSTREAM_GMS_EXCHANGES`` names another file in the same format,
such as one `python -m upstream_dagster.evaluation.capture` recorded from a live GMS.

A transport adapter replays the exchanges in order, checks each request (method, path, GraphQL
operation, variables and query where given; every batchGet body as the server parses it), and
the test fails if any exchange is left unconsumed."""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from requests.adapters import BaseAdapter

from upstream_dagster.datahub.gms import GmsGraph
from upstream_dagster.datahub.model import SearchQuery
from upstream_dagster.evaluation.capture import (
    GUARD,
    KEY,
    LEDGER,
    RAW,
    RAW_DBT,
    STG,
    guard_info,
    incident_info,
    run_event,
)

HOST = "http://gms.modelled:8080"
MODELLED = Path(__file__).parent / "modelled" / "gms_exchanges.json"
EXCHANGES = json.loads(Path(os.environ.get("UPSTREAM_GMS_EXCHANGES", MODELLED)).read_text())


class Replay(BaseAdapter):
    def __init__(self) -> None:
        super().__init__()
        self.queue: list[dict[str, Any]] = []
        self.sent: list[requests.PreparedRequest] = []

    def load(self, *names: str, source: dict[str, Any] | None = None) -> None:
        """Queue the exchanges of these fixtures (from ``source``, else the modelled file)."""
        for name in names:
            self.queue.extend((source or EXCHANGES)[name]["exchanges"])

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        assert self.queue, f"unexpected request {request.method} {request.url}"
        want = self.queue.pop(0)
        url = urlsplit(request.url or "")
        assert (request.method, url.path) == (want["method"], want["path"]), request.url
        body = json.loads(request.body) if request.body else None
        if url.path.endswith("/batchGet"):
            _as_the_server_parses_it(body)
        if "operation" in want:
            assert re.search(rf"(query|mutation)\s+{want['operation']}\s*[({{]", body["query"])
        if "expect_variables" in want:
            assert (body.get("variables") or {}) == want["expect_variables"]  # omitted = {}
        if "expect_proposal" in want:  # a recorded write: the same aspect, sent the same way
            proposal = body["proposal"]
            assert {k: proposal.get(k) for k in want["expect_proposal"]} == want["expect_proposal"]
        if "expect_query" in want:
            assert parse_qs(url.query) == want["expect_query"]
        self.sent.append(request)
        response = requests.Response()
        response.status_code = want.get("status", 200)
        response._content = json.dumps(want["response"]).encode()
        response.headers["Content-Type"] = "application/json"
        response.request, response.url = request, request.url
        return response

    def close(self) -> None:
        pass


def _as_the_server_parses_it(body: Any) -> None:
    """A batchGet body as EntityController.toEntityVersionRequest reads it: a list of objects,
    each with a urn and one key per aspect to return (unknown keys are silently skipped, so a
    key that is not an aspect, such as `aspectNames`, would return every aspect)."""
    assert isinstance(body, list) and body
    for entry in body:
        assert "urn" in entry and set(entry) - {"urn"}, entry
        assert all(v == {} for k, v in entry.items() if k != "urn"), entry
        assert not set(entry) & {"aspectNames", "aspects"}, entry


def _serve(monkeypatch: pytest.MonkeyPatch, connect: str) -> Iterator[Replay]:
    """Requests to HOST answered by the modelled exchanges, after the server's /config."""
    adapter = Replay()
    original = requests.Session.get_adapter

    def get_adapter(self: requests.Session, url: str) -> BaseAdapter:
        return adapter if url.startswith(HOST) else original(self, url)

    monkeypatch.setattr(requests.Session, "get_adapter", get_adapter)
    adapter.load(connect)
    yield adapter
    assert not adapter.queue, f"{len(adapter.queue)} modelled exchanges were never requested"


@pytest.fixture
def replay(monkeypatch: pytest.MonkeyPatch) -> Iterator[Replay]:
    """A DataHub 1.7 server."""
    yield from _serve(monkeypatch, "connect")


def _sent_patch(replay: Replay) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The first proposal sent to Rest.li `/aspects` and its JSON-patch operations."""
    ingest = next(r for r in replay.sent if urlsplit(r.url or "").path == "/aspects")
    proposal: dict[str, Any] = json.loads(ingest.body or b"{}")["proposal"]
    body = json.loads(proposal["aspect"]["value"])
    return proposal, body["patch"] if isinstance(body, dict) else body


def test_modelled_search_pages_through_scroll_results(replay: Replay) -> None:
    graph = GmsGraph(HOST)
    replay.load("search_paged")
    urns = graph.search(
        SearchQuery(platforms=("dbt",), domains=("urn:li:domain:finance",), names=("fct_*",))
    )
    assert urns == ["urn:li:dataset:(urn:li:dataPlatform:dbt,acme.marts.fct_invoices,PROD)", LEDGER]
    assert graph.counter.calls == 2  # one HTTP request per page


def test_modelled_batch_get_reads_many_urns_in_one_request(replay: Replay) -> None:
    graph = GmsGraph(HOST)
    replay.load("batch_get")
    found = graph.get_aspects([LEDGER, STG], ["ownership", "upstreamLineage"])
    assert found[LEDGER]["ownership"]["owners"][0]["owner"] == "urn:li:corpuser:ana"
    assert STG not in found
    # one key per aspect, as the server reads them (EntityController.toEntityVersionRequest)
    assert json.loads(replay.sent[-1].body or b"[]")[0] == {
        "urn": LEDGER,
        "ownership": {},
        "upstreamLineage": {},
    }
    assert graph.counter.calls == 1


def test_modelled_upstream_lineage_keeps_column_edges(replay: Replay) -> None:
    graph = GmsGraph(HOST)
    replay.load("batch_get")
    (edge,) = graph.lineage([LEDGER, STG], "upstream")
    assert (edge.upstream, edge.downstream) == (STG, LEDGER)
    assert [c.upstream_field.endswith(",amount)") for c in edge.columns] == [True]


def test_modelled_downstream_lineage_uses_scroll_across_lineage(replay: Replay) -> None:
    graph = GmsGraph(HOST)
    replay.load("downstream_lineage")
    down = [e.downstream for e in graph.lineage([STG], "downstream")]
    assert down == [LEDGER, "urn:li:dashboard:(looker,finance.ledger)"]


def test_modelled_lineage_as_of_reports_its_fallback(replay: Replay) -> None:
    graph = GmsGraph(HOST)
    replay.load("batch_get")
    found = graph.lineage([LEDGER, STG], "upstream", as_of_ms=5)
    assert found.fallback and "latest" in found.fallback  # said in the answer itself


def test_modelled_timeline_keeps_datahubs_event_shape(replay: Replay) -> None:
    graph = GmsGraph(HOST)
    replay.load("timeline")
    (tx,) = graph.timeline(
        "urn:li:dataset:(urn:li:dataPlatform:dbt,acme.raw.rebates,PROD)",
        ["TECHNICAL_SCHEMA"],
        start_ms=1000,
    )
    assert [(e.operation, e.parameters["fieldPath"]) for e in tx.events] == [
        ("REMOVE", "rebate_amt"),
        ("ADD", "rebate_amount"),
    ]
    assert tx.sem_ver_change == "MAJOR"


def test_modelled_assertion_runs_are_ordered_by_timestamp(replay: Replay) -> None:
    graph = GmsGraph(HOST)
    replay.load("assertion_runs")
    runs = graph.assertion_runs()
    assert [(r.assertion_urn, r.result) for r in runs] == [
        ("urn:li:assertion:a2", "SUCCESS"),
        ("urn:li:assertion:a1", "FAILURE"),
    ]
    assert dict(runs[1].native) == {"observed": "0"}


def test_modelled_write_is_reported_only_after_it_reads_back(replay: Replay) -> None:
    graph = GmsGraph(HOST)
    replay.load("write_readback")
    receipt = graph.write_aspect(LEDGER, "globalTags", {"tags": [{"tag": "urn:li:tag:pii"}]})
    assert receipt.written and "read back" in receipt.detail
    ingest = next(r for r in replay.sent if urlsplit(r.url or "").path == "/aspects")
    proposal = json.loads(ingest.body or b"{}")["proposal"]
    assert (proposal["entityUrn"], proposal["aspectName"]) == (LEDGER, "globalTags")


def test_modelled_writer_patches_an_owner_without_rewriting_the_others(replay: Replay) -> None:
    from upstream_dagster.conformance.proposals import Change
    from upstream_dagster.datahub.changes import apply as write_change

    graph = GmsGraph(HOST)
    replay.load("patch_owner")
    ((receipt, before),) = write_change(graph, LEDGER, Change("add_owner", ("urn:li:corpuser:bo",)))
    assert receipt.written and "patched" in receipt.detail
    assert before.value == {"owners": [{"owner": "urn:li:corpuser:ana", "type": "DATAOWNER"}]}
    ingest = next(r for r in replay.sent if urlsplit(r.url or "").path == "/aspects")
    proposal = json.loads(ingest.body or b"{}")["proposal"]
    assert proposal["changeType"] == "PATCH" and proposal["aspectName"] == "ownership"
    ops = json.loads(proposal["aspect"]["value"])["patch"]
    assert [op["op"] for op in ops] == ["add"]  # one owner added; ana's entry is never sent
    assert "urn:li:corpuser:ana" not in proposal["aspect"]["value"]


# -- writes through DataHub's own GraphQL mutations ---------------------------------------------
SERVER_INCIDENT = "urn:li:incident:7d3c1f0e-51b2-4a57-9d0c-2f4b8e1a6c90"


_incident = incident_info


def test_modelled_incident_is_raised_through_raise_incident_and_read_back(replay: Replay) -> None:
    graph = GmsGraph(HOST)
    replay.load("raise_incident")
    receipt = graph.write_aspect(
        KEY, "incidentInfo", _incident("FIELD", "ACTIVE", "INVESTIGATION", "NULLs in rebate_amt")
    )
    # The server names the incident; the receipt carries the URN a person can open.
    assert receipt.written and receipt.urn == SERVER_INCIDENT
    assert "raised" in receipt.detail and "read back" in receipt.detail
    # raiseIncident records source MANUAL whatever it is sent (RaiseIncidentResolver), so
    # nothing is sent for it and nothing depends on it
    raised = json.loads(replay.sent[-2].body or b"{}")["variables"]["input"]
    assert "source" not in raised
    # read back as the aspect itself (exact on every 1.x), not GraphQL's incidentStatus (1.3+)
    assert urlsplit(replay.sent[-1].url or "").path == "/openapi/v3/entity/incident/batchGet"


def test_modelled_second_write_moves_the_same_incident_with_update_incident_status(
    replay: Replay,
) -> None:
    graph = GmsGraph(HOST)
    replay.load("resolve_incident")
    receipt = graph.write_aspect(
        KEY, "incidentInfo", _incident("FIELD", "RESOLVED", "FIXED", "check passes after the fix")
    )
    assert receipt.written and receipt.urn == SERVER_INCIDENT
    assert "RESOLVED/FIXED" in receipt.detail  # no second incident was raised


def test_modelled_custom_incident_names_its_custom_type(replay: Replay) -> None:
    graph = GmsGraph(HOST)
    replay.load("raise_custom_incident")
    info = _incident(
        "CUSTOM",
        "ACTIVE",
        "TRIAGE",
        "cause not established",
        title="not_null_fct_ledger_amount failed; cause not established",
        description="## What failed",
        priority=1,
        assignees=[],
        customType="Upstream: cause not established",
    )
    assert graph.write_aspect(KEY, "incidentInfo", info).written


def test_modelled_incident_that_does_not_read_back_is_not_reported_written(
    replay: Replay,
) -> None:
    graph = GmsGraph(HOST)
    replay.load("raise_incident")
    replay.queue[-1] = dict(replay.queue[-1], response=[])  # incidentInfo is not there
    receipt = graph.write_aspect(
        KEY, "incidentInfo", _incident("FIELD", "ACTIVE", "INVESTIGATION", "NULLs in rebate_amt")
    )
    assert not receipt.written and "did not read back" in receipt.detail


def test_modelled_guard_is_a_dataset_level_custom_assertion_naming_its_column(
    replay: Replay,
) -> None:
    from upstream_dagster.datahub.model import assertion_properties

    graph = GmsGraph(HOST)
    replay.load("custom_assertion")
    receipt = graph.write_aspect(GUARD, "assertionInfo", guard_info())
    assert receipt.written and "upserted" in receipt.detail
    sent = json.loads(replay.sent[1].body or b"{}")["variables"]
    assert sent["fieldPath"] is None  # dataset-level: OSS rejects column-level run events
    # Upstream's keys survive the mutation, which keeps no customProperties, inside the logic.
    assert assertion_properties({"customAssertion": {"logic": sent["logic"]}}) == {
        "column": "rebate_amt",
        "upstream_guard": "not_null",
    }


def test_modelled_run_event_is_reported_with_report_assertion_result(replay: Replay) -> None:
    graph = GmsGraph(HOST)
    replay.load("assertion_result")
    event = {
        "timestampMillis": 1795990600000,
        "runId": "r9",
        "asserteeUrn": RAW,
        "assertionUrn": GUARD,
        "status": "COMPLETE",
        "result": {
            "type": "FAILURE",
            "nativeResults": {"message": "412 NULLs", "column": "rebate_amt"},
        },
    }
    graph.read_back_waits = (0.0, 0.05, 0.05)
    receipt = graph.write_aspect(GUARD, "assertionRunEvent", event)
    # run events are indexed asynchronously: the first read found nothing, the second did
    assert receipt.written and "reported, read back after" in receipt.detail


_run_event = run_event


def test_modelled_a_result_not_indexed_within_the_wait_is_not_reported_written(
    replay: Replay,
) -> None:
    graph = GmsGraph(HOST)
    replay.load("assertion_result")
    replay.queue[2] = replay.queue[1]  # still not indexed at the last read
    graph.read_back_waits = (0.0, 0.05)
    receipt = graph.write_aspect(GUARD, "assertionRunEvent", _run_event())
    assert not receipt.written and "indexes run events asynchronously" in receipt.detail


@pytest.fixture
def old_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Replay]:
    """A 1.5.0 server: no upsertCustomAssertion as the SDK sends it, no OWNERSHIP category."""
    yield from _serve(monkeypatch, "connect_1_5")


def test_modelled_operations_follow_the_servers_version(replay: Replay) -> None:
    graph = GmsGraph(HOST)  # the version is read once, from /config, when connecting
    assert graph.version == (1, 7, 0) and "1.7.0" in graph.server
    assert graph.operation("custom_assertion") == "GraphQL upsertCustomAssertion"
    assert graph.operation("assertion_result") == "GraphQL reportAssertionResult"


def test_modelled_an_older_server_gets_the_assertion_as_aspects_every_1x_takes(
    old_server: Replay,
) -> None:
    graph = GmsGraph(HOST)
    assert graph.version == (1, 5, 0) and "1.5.0" in graph.server
    assert "UPSERT assertionInfo" in graph.operation("custom_assertion")
    old_server.load("custom_assertion_1_5", "assertion_result_1_5")
    from upstream_dagster.datahub.aspects import guard_assertion

    info = guard_assertion("not_null", RAW, "rebate_amt")
    assert graph.write_aspect(GUARD, "assertionInfo", info).written
    graph.read_back_waits = (0.0,)
    result = graph.write_aspect(GUARD, "assertionRunEvent", _run_event())
    assert result.written and "written as an assertionRunEvent" in result.detail
    aspects = [
        json.loads(r.body or b"{}")["proposal"]["aspectName"]
        for r in old_server.sent
        if urlsplit(r.url or "").path == "/aspects"
    ]
    assert aspects == ["assertionInfo", "assertionRunEvent"]  # no mutation was sent


def test_modelled_structured_property_is_patched_alone_and_typed_by_its_definition(
    replay: Replay,
) -> None:
    from upstream_dagster.conformance.proposals import Change
    from upstream_dagster.datahub.changes import apply as write_change

    graph = GmsGraph(HOST)
    replay.load("structured_patch")
    change = Change("set_structured_property", ("urn:li:structuredProperty:fragilityScore", "0.40"))
    ((receipt, before),) = write_change(graph, RAW, change)
    assert receipt.written, receipt.detail
    ingest = next(r for r in replay.sent if urlsplit(r.url or "").path == "/aspects")
    proposal = json.loads(ingest.body or b"{}")["proposal"]
    assert proposal["changeType"] == "PATCH"
    ops = json.loads(proposal["aspect"]["value"])["patch"]
    # one property travels, as a number because its definition says number; the retention
    # property someone else set and lastRootCause are never sent, so never overwritten
    assert len(ops) == 1 and ops[0]["op"] == "add"
    assert ops[0]["value"]["values"] == [{"double": 0.4}]
    assert "retentionTime" not in proposal["aspect"]["value"]
    # the aspect is read once before (the pre-image kept for undo) and once after (read-back)
    reads = [r for r in replay.sent if urlsplit(r.url or "").path.endswith("/dataset/batchGet")]
    assert len(reads) == 2


def test_modelled_runbook_link_is_patched_in_keyed_by_its_url(replay: Replay) -> None:
    from upstream_dagster.conformance.proposals import Change
    from upstream_dagster.datahub.changes import apply as write_change

    graph = GmsGraph(HOST)
    replay.load("memory_patch")
    url = "https://upstream.invalid/runbooks/rename/k1"
    change = Change("add_memory", (url, "Runbook (rename of rebate_amt): check this feed first."))
    ((receipt, before),) = write_change(graph, RAW, change)
    assert receipt.written and receipt.aspect == "institutionalMemory", receipt.detail
    assert before.value is not None and len(before.value["elements"]) == 1  # kept for undo
    ingest = next(r for r in replay.sent if urlsplit(r.url or "").path == "/aspects")
    proposal = json.loads(ingest.body or b"{}")["proposal"]
    body = json.loads(proposal["aspect"]["value"])
    # one link added by URL; finance's wiki link is never sent, so never overwritten
    assert proposal["changeType"] == "PATCH"
    assert body["arrayPrimaryKeys"] == {"elements": ["url"]}
    assert [op["op"] for op in body["patch"]] == ["add"]
    assert body["patch"][0]["value"]["url"] == url
    assert "wiki.acme" not in proposal["aspect"]["value"]


def test_modelled_root_cause_column_tag_change_is_one_field_patch(replay: Replay) -> None:
    from upstream_dagster.conformance.proposals import Change
    from upstream_dagster.datahub.changes import apply as write_change

    graph = GmsGraph(HOST)
    replay.load("field_tag_patch")
    change = Change("add_column_tag", ("rebate_amt", "urn:li:tag:upstream-root-cause"))
    ((receipt, before),) = write_change(graph, RAW, change)
    assert receipt.written and receipt.aspect == "editableSchemaMetadata", receipt.detail
    assert before.value and before.value["editableSchemaFieldInfo"][0]["fieldPath"] == "rebate_amt"
    proposal, ops = _sent_patch(replay)
    assert proposal["changeType"] == "PATCH" and len(ops) == 1
    assert ops[0]["path"].startswith("/editableSchemaFieldInfo/rebate_amt/globalTags/tags/")
    assert "finance" not in proposal["aspect"]["value"]


def test_modelled_large_batches_split_into_requests_under_datahubs_limits(
    replay: Replay,
) -> None:
    """450 assertions: one search page, then five run-event requests of at most 100 URNs, each
    document far under DataHub's complexity, depth and token limits."""
    from upstream_dagster.datahub import graphql_ops

    graph = GmsGraph(HOST)
    urns = [f"urn:li:assertion:bulk-{i:03d}" for i in range(450)]
    replay.queue.append(
        {
            "method": "POST",
            "path": "/api/graphql",
            "operation": "upstreamSearch",
            "response": {
                "data": {
                    "scrollAcrossEntities": {
                        "nextScrollId": None,
                        "count": 450,
                        "total": 450,
                        "searchResults": [
                            {"entity": {"urn": u, "type": "ASSERTION"}} for u in urns
                        ],
                    }
                }
            },
        }
    )
    for chunk in graphql_ops.chunks(urns):
        replay.queue.append(
            {
                "method": "POST",
                "path": "/api/graphql",
                "operation": "upstreamAssertionRuns",
                "expect_variables": {"urns": list(chunk), "limit": 1, "start": None},
                "response": {"data": {"entities": [{"urn": u, "runEvents": None} for u in chunk]}},
            }
        )
    assert graph.assertion_runs() == []
    graphql = [json.loads(r.body or b"{}") for r in replay.sent if r.method == "POST"]
    sizes = [len(body["variables"].get("urns", [])) for body in graphql]
    assert sizes == [0, 100, 100, 100, 100, 50]  # one search page, then five chunks
    for body in graphql:
        assert graphql_ops.measure(body["query"]).within_limits()

    many = [f"urn:li:dataset:(urn:li:dataPlatform:dbt,acme.bulk_{i},PROD)" for i in range(250)]
    for _chunk in graphql_ops.chunks(many):
        replay.queue.append(
            {"method": "POST", "path": "/openapi/v3/entity/dataset/batchGet", "response": []}
        )
    graph.get_aspects(many, ["ownership"])
    bodies = [json.loads(r.body or b"[]") for r in replay.sent[-3:]]
    assert [len(b) for b in bodies] == [100, 100, 50]


# -- the operations themselves, against DataHub's own schema -----------------------------------
# The 35 files a DataHub 1.7 GMS loads, unchanged (tests/datahub_schema/SOURCE.md).
SCHEMA_DIR = Path(__file__).parent / "datahub_schema"


@functools.cache
def _schema() -> Any:
    import graphql

    files = sorted(SCHEMA_DIR.glob("*.graphql"))
    assert len(files) == 35, "DataHub's schema is 35 files"
    return graphql.build_schema("\n".join(f.read_text() for f in files))


def _documents() -> dict[str, str]:
    """Every GraphQL operation the project sends: its own, and the SDK's two it calls."""
    from datahub.ingestion.graph.client import DataHubGraph

    from upstream_dagster.datahub import graphql_ops

    docs = dict(graphql_ops.OPERATIONS)
    sent: dict[str, str] = {}

    class Capture(DataHubGraph):
        def __init__(self) -> None:
            pass

        def execute_graphql(self, query: str, variables: Any = None, **kw: Any) -> Any:
            name = re.search(r"(?:query|mutation)\s+(\w+)", query)
            assert name is not None
            sent[name.group(1)] = query
            return {name.group(1): {"urn": "u"}}

    Capture().upsert_custom_assertion(None, "urn", "t", "d", platform_name="p")
    Capture().report_assertion_result("urn", 1, "SUCCESS")
    assert set(sent) == set(graphql_ops.SDK_OPERATIONS)
    return {**docs, **sent}


@pytest.mark.slow
def test_every_graphql_operation_is_listed_valid_and_under_datahubs_limits() -> None:
    import graphql

    from upstream_dagster.datahub import graphql_ops

    docs = _documents()
    assert sorted(docs) == [
        "reportAssertionResult",
        "upsertCustomAssertion",
        "upstreamAssertionCheck",
        "upstreamAssertionRuns",
        "upstreamFindIncidents",
        "upstreamLineage",
        "upstreamRaiseIncident",
        "upstreamSearch",
        "upstreamUpdateIncidentStatus",
        "upstreamWhoAmI",
    ]
    for name, doc in docs.items():
        assert graphql.validate(_schema(), graphql.parse(doc)) == [], name
        assert graphql_ops.measure(doc).within_limits(), name
    # every Python module that sends GraphQL takes its documents from graphql_ops
    package = Path(graphql_ops.__file__).parent.parent
    for module in package.rglob("*.py"):
        if module.name not in ("graphql_ops.py", "action.py"):  # action.py: Dagster's GraphQL
            assert not re.search(r"(query|mutation)\s+\w+\s*\(\$", module.read_text()), module


def _graphql_exchanges() -> list[tuple[str, dict[str, Any]]]:
    return [
        (name, exchange)
        for name, fixture in EXCHANGES.items()
        if not name.startswith("_")
        for exchange in fixture["exchanges"]
        if "operation" in exchange
    ]


def test_every_exchange_sends_variables_datahubs_schema_accepts() -> None:
    """Enum values (FIELD, not COLUMN), required inputs and types, as GraphQL coerces them."""
    import graphql
    from graphql.execution.values import get_variable_values

    docs = _documents()
    seen = set()
    for name, exchange in _graphql_exchanges():
        op = exchange["operation"]
        seen.add(op)
        assert "expect_variables" in exchange, f"{name}: {op} records no variables"
        (definition,) = graphql.parse(docs[op]).definitions
        coerced = get_variable_values(
            _schema(), definition.variable_definitions, exchange["expect_variables"]
        )
        assert not isinstance(coerced, list), f"{name}: {op}: {coerced}"
    assert seen == set(docs)  # every operation has a modelled exchange


def _entity_type(value: Any, info: Any, abstract: Any) -> str:
    """An entity's GraphQL type from its URN, as the server resolves it."""
    kind = str(value["urn"]).split(":")[2]
    return {"dataPlatform": "DataPlatform", "corpuser": "CorpUser"}.get(
        kind, kind[0].upper() + kind[1:]
    )


def test_every_exchange_answers_in_a_shape_datahubs_schema_produces() -> None:
    """Each modelled response is what executing its document over DataHub's schema returns
    for that data: every field selected, typed and in the schema's enums, nothing extra."""
    import graphql

    docs = _documents()
    for name, exchange in _graphql_exchanges():
        response = exchange["response"]
        if "errors" in response or exchange.get("status", 200) != 200:
            continue
        result = graphql.execute_sync(
            _schema(),
            graphql.parse(docs[exchange["operation"]]),
            root_value=response["data"],
            variable_values=exchange["expect_variables"],
            type_resolver=_entity_type,
        )
        assert result.errors is None, f"{name}: {result.errors}"
        assert result.data == response["data"], name


def test_schema_check_catches_a_wrong_enum_value_and_a_response_field_not_in_the_schema() -> None:
    import graphql
    from graphql.execution.values import get_variable_values

    from upstream_dagster.datahub.graphql_ops import RAISE_INCIDENT, SEARCH

    (definition,) = graphql.parse(RAISE_INCIDENT).definitions
    bad = {"input": {"type": "COLUMN", "resourceUrns": [LEDGER]}}
    errors = get_variable_values(_schema(), definition.variable_definitions, bad)
    assert isinstance(errors, list) and "COLUMN" in str(errors[0])
    wrong = {"scrollAcrossEntities": {"nextScrollId": None, "count": 1, "total": 1,
             "searchResults": [{"entity": {"urn": LEDGER, "type": "TABLE"}}]}}  # fmt: skip
    done = graphql.execute_sync(
        _schema(), graphql.parse(SEARCH), root_value=wrong, type_resolver=_entity_type,
        variable_values={"input": {"query": "*"}},
    )  # fmt: skip
    assert done.errors and "TABLE" in str(done.errors[0])  # EntityType has no TABLE


def test_modelled_patch_whose_value_is_missing_on_read_back_is_not_written(
    replay: Replay,
) -> None:
    from upstream_dagster.conformance.proposals import Change
    from upstream_dagster.datahub.changes import apply as write_change

    graph = GmsGraph(HOST)
    replay.load("patch_owner")
    replay.queue[-1] = replay.queue[0]  # the read-back still shows ana alone
    ((receipt, _),) = write_change(graph, LEDGER, Change("add_owner", ("urn:li:corpuser:bo",)))
    assert not receipt.written and "did not read back" in receipt.detail


def test_modelled_column_tag_is_patched_onto_the_field_alone(replay: Replay) -> None:
    graph = GmsGraph(HOST)
    replay.load("field_tag_patch")
    wanted = {
        "editableSchemaFieldInfo": [
            {
                "fieldPath": "rebate_amt",
                "description": "Rebate in cents, set by finance",
                "globalTags": {
                    "tags": [{"tag": "urn:li:tag:pii"}, {"tag": "urn:li:tag:upstream-root-cause"}]
                },
            }
        ]
    }
    receipt = graph.write_aspect(RAW, "editableSchemaMetadata", wanted)
    assert receipt.written and "1 column tag" in receipt.detail
    proposal, ops = _sent_patch(replay)
    # one added tag on one field; finance's description and the pii tag are never sent
    assert proposal["changeType"] == "PATCH" and len(ops) == 1
    assert ops[0]["path"].startswith("/editableSchemaFieldInfo/rebate_amt/globalTags/tags/")
    assert "finance" not in proposal["aspect"]["value"]


def test_modelled_aspect_history_reads_versions_until_gms_has_no_more(replay: Replay) -> None:
    graph = GmsGraph(HOST)
    replay.load("aspect_history")
    versions = graph.aspect_history(LEDGER, "ownership")
    # versions 1..N are the earlier values, oldest first; version 0 is the current one and
    # comes last: an aspect written once has a history of one
    assert [len(v.value["owners"]) for v in versions] == [1, 2, 3]
    assert [v.version for v in versions] == [1, 2, 3]
    assert versions.fallback and "version by version" in versions.fallback


def test_modelled_timeline_asks_from_the_beginning_and_names_ownership_as_the_server_does(
    replay: Replay,
) -> None:
    """Without a start the server looks back seven days only (TimelineServiceImpl), so every
    request names one; OWNER became OWNERSHIP in 1.6 and an older server is asked OWNER."""
    new = GmsGraph(HOST)  # a 1.7 server
    replay.load("timeline_ownership")
    (tx,) = new.timeline(LEDGER, ["OWNERSHIP"])
    assert [e.category for e in tx.events] == ["OWNERSHIP"]


def test_modelled_an_older_server_is_asked_for_owner_and_its_events_read_as_ownership(
    old_server: Replay,
) -> None:
    old = GmsGraph(HOST)
    old_server.load("timeline_owner_1_5")
    (tx,) = old.timeline(LEDGER, ["OWNERSHIP"])
    assert [(e.category, e.parameters["ownerUrn"]) for e in tx.events] == [
        ("OWNERSHIP", "urn:li:corpuser:bo")
    ]


def test_modelled_whole_graph_lineage_is_searched_then_read_in_batches(replay: Replay) -> None:
    """`lineage_edges` (the dial's lineage slice): one search per entity kind, then the lineage
    aspects of what was found, batched per entity type."""
    graph = GmsGraph(HOST)
    found = {"DATASET": [LEDGER, STG], "CHART": [], "DASHBOARD": ["urn:li:dashboard:(looker,l)"]}
    for kind in ("DATASET", "CHART", "DASHBOARD", "DATA_JOB"):
        hits = [{"entity": {"urn": u, "type": kind}} for u in found.get(kind, [])]
        page = {"nextScrollId": None, "count": len(hits), "total": len(hits), "searchResults": hits}
        replay.queue.append(
            {
                "method": "POST",
                "path": "/api/graphql",
                "operation": "upstreamSearch",
                "expect_variables": {
                    "input": {"types": [kind], "query": "*", "scrollId": None, "count": 1000}
                },
                "response": {"data": {"scrollAcrossEntities": page}},
            }
        )
    lineage = {"upstreams": [{"dataset": STG, "type": "TRANSFORMED"}]}
    replay.queue.append(
        {
            "method": "POST",
            "path": "/openapi/v3/entity/dataset/batchGet",
            "response": [{"urn": LEDGER, "upstreamLineage": {"value": lineage}}],
        }
    )
    inputs = {"datasets": [LEDGER]}
    replay.queue.append(
        {
            "method": "POST",
            "path": "/openapi/v3/entity/dashboard/batchGet",
            "response": [
                {"urn": "urn:li:dashboard:(looker,l)", "dashboardInfo": {"value": inputs}}
            ],
        }
    )
    edges = {(e.upstream, e.downstream) for e in graph.lineage_edges()}
    assert edges == {(STG, LEDGER), (LEDGER, "urn:li:dashboard:(looker,l)")}


def test_modelled_refused_mutation_is_a_receipt_not_a_crash(replay: Replay) -> None:
    """A GMS that answers a mutation with a GraphQL error (here: no privilege) leaves a receipt
    that says so; a write-back in progress goes on and keeps the pre-images it has."""
    graph = GmsGraph(HOST)
    replay.load("raise_incident")
    replay.queue[1] = dict(
        replay.queue[1],
        response={
            "errors": [{"message": "Unauthorized to perform this action."}],
            "data": {"raiseIncident": None},
        },
    )
    replay.queue.pop()  # nothing is read back after a refusal
    receipt = graph.write_aspect(
        KEY, "incidentInfo", _incident("FIELD", "ACTIVE", "INVESTIGATION", "NULLs in rebate_amt")
    )
    assert not receipt.written
    assert "refused" in receipt.detail and "Unauthorized" in receipt.detail


def test_modelled_investigation_reads_a_node_as_siblings_profiles_and_its_timeline(
    replay: Replay,
) -> None:
    """On a server an investigated node costs three requests: its siblings (batchGet), its
    profiles as timeseries values stamped with their own times, and its schema changes from the
    timeline. Schema versions are never read one request at a time."""
    from upstream_dagster.datahub.probe import profiles_of, read_history, schema_changes

    graph = GmsGraph(HOST)
    replay.load("node_history")
    history = read_history(graph, RAW_DBT)
    assert "schemaMetadata" not in history
    assert history["siblings"][-1].value["primary"] is True
    profiles = profiles_of(history["datasetProfile"])
    assert [(p.at_ms, p.columns[0][1].null_share) for p in profiles] == [
        (1795900000000, 0.0),
        (1795990600000, 1.0),
    ]
    asked = json.loads(replay.sent[2].body or b"{}")
    assert asked["aspect"] == "datasetProfile" and asked["urn"] == RAW_DBT
    events = schema_changes(graph, RAW_DBT, history)
    assert [(e.at_ms, e.operation, e.column) for e in events] == [
        (1795990000000, "REMOVE", "rebate_amt"),
        (1795990000000, "ADD", "rebate_amount"),
    ]
    assert graph.counter.calls == 3  # one request each (the connect is not counted)


def test_modelled_a_servers_node_reads_replay_from_the_incident_record(replay: Replay) -> None:
    """What an investigation on a server read (siblings, profiles, timeline) is kept in its
    record and answers the same questions again with no DataHub at all."""
    from upstream_dagster.datahub.probe import read_history, schema_changes
    from upstream_dagster.datahub.recording import RecordingGraph, ReplayGraph

    replay.load("node_history")
    live = RecordingGraph(GmsGraph(HOST))
    events = schema_changes(live, RAW_DBT, read_history(live, RAW_DBT))
    calls = sorted((r["call"], r["calls"]) for r in live.reads)
    assert calls == [("histories", 2), ("timeline", 1)]
    again = ReplayGraph(json.loads(json.dumps(live.reads)), live.capabilities)
    assert schema_changes(again, RAW_DBT, read_history(again, RAW_DBT)) == events


def test_the_capture_script_records_what_each_modelled_fixture_holds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`python -m upstream_dagster.evaluation.capture` makes each test's calls and keeps every
    exchange; run against the modelled server, it writes the modelled fixtures back: the same
    requests in the same order, the same answers, in the format the tests replay."""
    from upstream_dagster.evaluation import capture

    server = Replay()
    recorder = capture.Recorder(inner=server)
    original = requests.Session.get_adapter
    monkeypatch.setattr(
        requests.Session,
        "get_adapter",
        lambda self, url: recorder if url.startswith(HOST) else original(self, url),
    )
    server.load("connect", *capture.SCENES)
    found = capture.capture(lambda: GmsGraph(HOST), recorder, modelled={})
    assert not server.queue  # every modelled exchange was asked for, in order

    def shape(ex: dict[str, Any]) -> tuple[Any, ...]:
        keys = ("method", "path", "operation", "expect_variables", "response")
        return tuple(ex.get(k) for k in keys)

    assert set(found) == {"connect", *capture.SCENES}
    for name, fixture in found.items():
        want = [shape(e) for e in EXCHANGES[name]["exchanges"]]
        assert [shape(e) for e in fixture["exchanges"]] == want, name


def test_modelled_a_server_older_than_1_4_gets_no_document_and_says_where_the_rca_stays(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The post-mortem Document needs DataHub 1.4 (documents.graphql, 711ac49c0a): a 1.2
    server is sent nothing, and the receipt says the analysis stays in the incident's
    description."""
    for server in _serve(monkeypatch, "connect_1_2"):
        graph = GmsGraph(HOST)
        before = len(server.sent)
        info = {"title": "Post-mortem", "contents": {"text": "x"}, "status": {"state": "PUBLISHED"}}
        receipt = graph.write_aspect("urn:li:document:upstream-postmortem-x", "documentInfo", info)
        assert not receipt.written and "has no Document entity" in receipt.detail
        assert "1.4" in receipt.detail and "incident's description" in receipt.detail
        assert len(server.sent) == before  # nothing was sent


def test_modelled_reviewer_token_names_its_user_and_is_never_repeated(replay: Replay) -> None:
    """identity: datahub: GraphQL `me` with the reviewer's own token, in one exchange; a token
    DataHub refuses, or a server whose authentication is off, names nobody."""
    from upstream_dagster.datahub.gms.identity import whoami
    from upstream_dagster.errors import UpstreamError

    replay.queue.clear()  # whoami opens its own connection, with the reviewer's token
    replay.load("whoami")
    assert whoami(HOST, "tok-alice-123") == "alice"
    asked = replay.sent[-1]
    assert asked.headers["Authorization"] == "Bearer tok-alice-123"
    assert json.loads(asked.body or b"{}")["query"].startswith("query upstreamWhoAmI")
    replay.load("whoami_refused")
    with pytest.raises(UpstreamError, match="did not accept the reviewer's token") as refused:
        whoami(HOST, "tok-mallory-999")
    assert "tok-mallory-999" not in str(refused.value)
    replay.load("whoami_auth_off")
    with pytest.raises(UpstreamError, match="authentication is off"):
        whoami(HOST, "anything")
    with pytest.raises(UpstreamError, match="no DataHub token came"):
        whoami(HOST, "")
