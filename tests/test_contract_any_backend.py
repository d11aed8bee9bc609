"""The MetadataGraph contract, as it holds for any estate, run on every backend that is reachable:
`lite` always (the demo estate), `gms` when DATAHUB_GMS_URL (and DATAHUB_GMS_TOKEN) point at a
live DataHub. Switching is configuration only: the same tests, the same calls.

Against a live GMS the read tests only read; the one write test writes to a scratch dataset of
Upstream's own through `upstream spike`'s surfaces and expects every one to PASS."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator

import pytest

from upstream_dagster.datahub import MetadataGraph, open_graph
from upstream_dagster.datahub.model import Json, SearchQuery
from upstream_dagster.settings import Settings

# Read before conftest's autouse fixture hides a developer's GMS from every other test.
LIVE_URL = os.environ.get("DATAHUB_GMS_URL")
LIVE_TOKEN = os.environ.get("DATAHUB_GMS_TOKEN")
BACKENDS = [
    "lite",
    pytest.param(
        "gms",
        marks=pytest.mark.skipif(
            not (LIVE_URL and LIVE_TOKEN),
            reason="live GMS tests run only with DATAHUB_GMS_URL and DATAHUB_GMS_TOKEN set",
        ),
    ),
]


@pytest.fixture(params=BACKENDS)
def graph(
    request: pytest.FixtureRequest, estate: Settings, monkeypatch: pytest.MonkeyPatch
) -> Iterator[MetadataGraph]:
    if request.param == "gms":
        monkeypatch.setenv("DATAHUB_GMS_URL", str(LIVE_URL))
        monkeypatch.setenv("DATAHUB_GMS_TOKEN", str(LIVE_TOKEN))
    from upstream_dagster.settings import load

    g = open_graph(load())
    assert g.transport == request.param
    yield g
    g.close()


def _datasets(graph: MetadataGraph, n: int = 250) -> list[str]:
    urns = graph.search(SearchQuery(entity_type="dataset"))
    assert urns == sorted(set(urns)), "search answers sorted, unique URNs"
    if not urns:
        pytest.skip("this DataHub holds no datasets")
    return urns[:n]


def test_aspects_come_back_for_many_urns_in_batched_calls(
    graph: MetadataGraph, monkeypatch: pytest.MonkeyPatch
) -> None:
    urns = _datasets(graph)
    before = graph.counter.calls
    found = graph.get_aspects(urns, ["schemaMetadata", "ownership"])
    assert graph.counter.calls - before <= math.ceil(len(urns) / 100)
    assert set(found) <= set(urns) and found
    assert all(set(a) <= {"schemaMetadata", "ownership"} for a in found.values())

    # a shape is applied to each aspect as it is read (the read path slims schemas so):
    # on the small path and on the scan above Lite's SCAN_ABOVE alike
    def fields(aspect: str, value: Json) -> Json:
        return {"n": len(value.get("fields") or ())} if aspect == "schemaMetadata" else value

    monkeypatch.setattr("upstream_dagster.datahub.lite.SCAN_ABOVE", 10)
    for asked in (urns[:5], urns):
        whole = graph.get_aspects(asked, ["schemaMetadata", "ownership"])
        shaped = graph.get_aspects(asked, ["schemaMetadata", "ownership"], shape=fields)
        assert shaped == {
            u: {n: fields(n, v) for n, v in a.items()} for u, a in whole.items()
        } and any("schemaMetadata" in a for a in shaped.values())


def test_lineage_edges_touch_the_urns_asked_about(graph: MetadataGraph) -> None:
    urns = _datasets(graph, 50)
    up = graph.lineage(urns, "upstream")
    assert all(e.downstream in urns for e in up)
    down = graph.lineage(urns[:5], "downstream")
    assert all(e.upstream in urns[:5] for e in down)
    with pytest.raises(ValueError, match="direction"):
        graph.lineage(urns[:1], "sideways")


def test_timeline_transactions_are_in_time_order(graph: MetadataGraph) -> None:
    for urn in _datasets(graph, 5):
        times = [t.timestamp_ms for t in graph.timeline(urn)]
        assert times == sorted(times)


def test_latest_assertion_runs_are_one_per_assertion_in_time_order(graph: MetadataGraph) -> None:
    runs = graph.assertion_runs(None, None, latest_only=True)
    assert [r.timestamp_ms for r in runs] == sorted(r.timestamp_ms for r in runs)
    assert len({r.assertion_urn for r in runs}) == len(runs)
    assert {r.result for r in runs} <= {"SUCCESS", "FAILURE", "ERROR", "INIT"}


def test_every_write_surface_reads_back(graph: MetadataGraph) -> None:
    from upstream_dagster.datahub.spike import PASS, spike

    results = spike(graph)
    # a server older than 1.4 has no Document entity: that surface says so, and nothing else
    too_old = "has no Document entity (DataHub 1.4 added it)"
    failed = [(s.name, s.result) for s in results if s.result != PASS and too_old not in s.detail]
    assert failed == []
