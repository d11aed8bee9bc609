"""The `gms` backend against recorded HTTP exchanges (no DataHub server can run here).

The exchanges in tests/recorded/gms_exchanges.json are written in DataHub's documented shapes.
A transport adapter replays them in order, checks each request (method, path, GraphQL operation,
variables and query where recorded), and the test fails if any exchange is left unconsumed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from requests.adapters import BaseAdapter

from upstream_dagster.datahub.gms import GmsGraph
from upstream_dagster.datahub.model import SearchQuery

HOST = "http://gms.recorded:8080"
EXCHANGES = json.loads((Path(__file__).parent / "recorded" / "gms_exchanges.json").read_text())
LEDGER = "urn:li:dataset:(urn:li:dataPlatform:dbt,acme.marts.fct_ledger,PROD)"
STG = "urn:li:dataset:(urn:li:dataPlatform:dbt,acme.staging.stg_ledger,PROD)"


class Replay(BaseAdapter):
    def __init__(self) -> None:
        super().__init__()
        self.queue: list[dict[str, Any]] = []
        self.sent: list[requests.PreparedRequest] = []

    def load(self, *names: str) -> None:
        for name in names:
            self.queue.extend(EXCHANGES[name])

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        assert self.queue, f"unexpected request {request.method} {request.url}"
        want = self.queue.pop(0)
        url = urlsplit(request.url or "")
        assert (request.method, url.path) == (want["method"], want["path"]), request.url
        body = json.loads(request.body) if request.body else None
        if "operation" in want:
            assert f"query {want['operation']}(" in body["query"]
        if "expect_variables" in want:
            assert body["variables"] == want["expect_variables"]
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


@pytest.fixture
def replay(monkeypatch: pytest.MonkeyPatch) -> Iterator[Replay]:
    adapter = Replay()
    original = requests.Session.get_adapter

    def get_adapter(self: requests.Session, url: str) -> BaseAdapter:
        return adapter if url.startswith(HOST) else original(self, url)

    monkeypatch.setattr(requests.Session, "get_adapter", get_adapter)
    adapter.load("connect")
    yield adapter
    assert not adapter.queue, f"{len(adapter.queue)} recorded exchanges were never requested"


def test_recorded_search_pages_through_scroll_results(replay: Replay) -> None:
    graph = GmsGraph(HOST)
    replay.load("search_paged")
    urns = graph.search(
        SearchQuery(platforms=("dbt",), domains=("urn:li:domain:finance",), names=("fct_*",))
    )
    assert urns == ["urn:li:dataset:(urn:li:dataPlatform:dbt,acme.marts.fct_invoices,PROD)", LEDGER]
    assert graph.counter.calls == 2  # one HTTP request per page


def test_recorded_batch_get_reads_many_urns_in_one_request(replay: Replay) -> None:
    graph = GmsGraph(HOST)
    replay.load("batch_get")
    found = graph.get_aspects([LEDGER, STG], ["ownership", "upstreamLineage"])
    assert found[LEDGER]["ownership"]["owners"][0]["owner"] == "urn:li:corpuser:ana"
    assert STG not in found
    assert json.loads(replay.sent[-1].body or b"[]")[0] == {
        "urn": LEDGER,
        "aspectNames": ["ownership", "upstreamLineage"],
    }
    assert graph.counter.calls == 1


def test_recorded_upstream_lineage_keeps_column_edges(replay: Replay) -> None:
    graph = GmsGraph(HOST)
    replay.load("batch_get")
    (edge,) = graph.lineage([LEDGER, STG], "upstream")
    assert (edge.upstream, edge.downstream) == (STG, LEDGER)
    assert [c.upstream_field.endswith(",amount)") for c in edge.columns] == [True]


def test_recorded_downstream_lineage_uses_scroll_across_lineage(replay: Replay) -> None:
    graph = GmsGraph(HOST)
    replay.load("downstream_lineage")
    down = [e.downstream for e in graph.lineage([STG], "downstream")]
    assert down == [LEDGER, "urn:li:dashboard:(looker,finance.ledger)"]


def test_recorded_lineage_as_of_reports_its_fallback(replay: Replay) -> None:
    graph = GmsGraph(HOST)
    replay.load("batch_get")
    graph.lineage([LEDGER, STG], "upstream", as_of_ms=5)
    assert graph.last_fallback and "latest" in graph.last_fallback


def test_recorded_timeline_keeps_datahubs_event_shape(replay: Replay) -> None:
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


def test_recorded_assertion_runs_are_ordered_by_timestamp(replay: Replay) -> None:
    graph = GmsGraph(HOST)
    replay.load("assertion_runs")
    runs = graph.assertion_runs()
    assert [(r.assertion_urn, r.result) for r in runs] == [
        ("urn:li:assertion:a2", "SUCCESS"),
        ("urn:li:assertion:a1", "FAILURE"),
    ]
    assert dict(runs[1].native) == {"observed": "0"}


def test_recorded_write_is_reported_only_after_it_reads_back(replay: Replay) -> None:
    graph = GmsGraph(HOST)
    replay.load("write_readback")
    receipt = graph.write_aspect(LEDGER, "globalTags", {"tags": [{"tag": "urn:li:tag:pii"}]})
    assert receipt.written and "read back" in receipt.detail
    ingest = next(r for r in replay.sent if urlsplit(r.url or "").path == "/aspects")
    proposal = json.loads(ingest.body or b"{}")["proposal"]
    assert (proposal["entityUrn"], proposal["aspectName"]) == (LEDGER, "globalTags")


def test_recorded_writer_patches_an_owner_without_rewriting_the_others(replay: Replay) -> None:
    from upstream_dagster.conformance.proposals import Change
    from upstream_dagster.datahub.writers import write_change

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
