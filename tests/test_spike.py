"""`upstream spike` over the real embedded DataHub: PASS only for what reads back, PARTIAL for
what was accepted but did not, FAIL for an error. Then against modelled servers of each release
(tests/modelled/), recorded with secrets redacted, and replayed: modelled exchanges in tests
named `modelled`, exchanges recorded from a real DataHub (tests/recorded/) in tests named
`recorded`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from upstream_dagster.cli import app
from upstream_dagster.datahub import open_graph
from upstream_dagster.datahub.model import Receipt
from upstream_dagster.datahub.spike import FAIL, PARTIAL, PASS, spike
from upstream_dagster.settings import Settings


def test_spike_passes_every_surface_on_the_embedded_datahub(estate: Settings) -> None:
    result = CliRunner().invoke(app, ["spike"])
    assert result.exit_code == 0, result.output
    assert "20/20 surfaces PASS" in result.output
    assert "DataHub Lite (SQLite) at" in result.output  # which DataHub answered, and how
    for surface in ("raise incident", "structured property", "runbook link", "column tag"):
        assert surface in result.output


class Forgetful:
    """A DataHub that accepts incident and tag writes but keeps neither, and fails timelines."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def write_aspect(self, urn: str, aspect: str, value: Any) -> Receipt:
        if aspect in ("incidentInfo", "globalTags"):
            return Receipt(urn, aspect, True, "accepted")
        written: Receipt = self.inner.write_aspect(urn, aspect, value)
        return written

    def apply_change(self, urn: str, change: Any) -> Receipt:
        if change.kind == "add_tag":
            return Receipt(urn, "globalTags", True, "accepted")
        applied: Receipt = self.inner.apply_change(urn, change)
        return applied

    def timeline(self, *args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("timeline endpoint unreachable")


def test_spike_reports_what_did_not_read_back_and_what_failed(estate: Settings) -> None:
    graph = open_graph(estate)
    try:
        results = {s.name: s for s in spike(Forgetful(graph))}  # type: ignore[arg-type]
    finally:
        graph.close()
    assert results["raise incident"].result == PARTIAL
    assert "does not read back" in results["raise incident"].detail
    assert results["tag"].result == PARTIAL
    assert results["timeline"].result == FAIL
    assert "unreachable" in results["timeline"].detail
    assert results["owner"].result == PASS and results["search"].result == PASS
    result = CliRunner().invoke(app, ["spike"], env={"DATAHUB_GMS_URL": "http://127.0.0.1:9"})
    assert result.exit_code == 1
    assert "cannot reach DataHub GMS" in result.output


# -- against modelled servers of each release, and replayed from a recording ------------------
RECORDED = Path(__file__).parent / "recorded"
SCRATCH = "urn:li:dataset:(urn:li:dataPlatform:dbt,acme.marts.fct_ledger,PROD)"


def _modelled(monkeypatch: pytest.MonkeyPatch, release: str) -> Any:
    from .modelled.server import install

    server = install(monkeypatch, release)
    server.seed(SCRATCH, "datasetProperties", {"name": "fct_ledger", "customProperties": {}})
    return server


@pytest.mark.parametrize("release", ["1.0", "1.3", "1.4", "1.6", "1.7"])
def test_modelled_spike_writes_every_surface_on_each_release(
    release: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every write surface PASSes against a modelled server of each release (the Document
    only from 1.4, where the entity exists); reads answer what the model holds."""
    from upstream_dagster.datahub.gms import GmsGraph

    from .modelled.server import HOST

    _modelled(monkeypatch, release)
    results = {s.name: s for s in spike(GmsGraph(HOST))}
    assert len(results) == 20 and results["search"].result == PASS
    writes = list(results)[6:]
    document = results.pop("post-mortem document")
    assert all(results[w].result == PASS for w in writes if w in results), {
        w: results[w].detail for w in writes if w in results and results[w].result != PASS
    }
    if release in ("1.0", "1.3"):
        assert document.result == PARTIAL and "DataHub 1.4 added it" in document.detail
    else:
        assert document.result == PASS and "with its owner" in document.detail


def _replay(record: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The spike again with no server: each request must be the one recorded, in order."""
    from upstream_dagster.datahub.gms import GmsGraph

    from .test_gms_modelled import HOST, _serve

    names = [n for n in record if not n.startswith("_")]
    for replay in _serve(monkeypatch, names[0]):  # asserts every exchange was asked for
        replay.queue.clear()
        replay.load(*names, source=record)
        graph = GmsGraph(HOST)
        graph.read_back_waits = tuple(0.0 for _ in graph.read_back_waits)
        found = {s.name: s.result for s in spike(graph, now_ms=record["_spike"]["now_ms"])}
    return found


def test_modelled_spike_recording_keeps_no_secret_and_replays_to_the_same_verdicts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`upstream spike --record` against a (modelled) 1.3 server: the file holds no token and
    no host, and replaying it runs the same spike to the same verdicts, request by request."""
    token = "tok-S3CRET-alice-0042"
    server = _modelled(monkeypatch, "1.3")
    server.seed(SCRATCH, "editableDatasetProperties", {"description": f"pasted {token} here"})
    out = tmp_path / "spike.json"
    env = {"DATAHUB_GMS_URL": "http://gms.modelled:8080", "DATAHUB_GMS_TOKEN": token,
           "UPSTREAM_STATE_DIR": str(tmp_path / "state")}  # fmt: skip
    result = CliRunner().invoke(app, ["spike", "--record", str(out)], env=env)
    assert "every exchange recorded in" in result.output, result.output
    text = out.read_text()
    assert token not in text and "gms.modelled" not in text and "Bearer" not in text
    record = json.loads(text)
    assert record["_spike"]["server"] == "DataHub GMS 1.3.0"
    assert list(record)[2:4] == ["connect", "search"]  # grouped by surface, in order
    assert _replay(record, monkeypatch) == record["_spike"]["results"]
    # a write sent another way than recorded (here every change merged, none patched) fails
    from upstream_dagster.datahub.gms import writes

    monkeypatch.setattr(writes, "patches", lambda version, kind: False)
    with pytest.raises(AssertionError):
        _replay(record, monkeypatch)


def test_spike_recording_needs_a_server(tmp_path: Path) -> None:
    env = {"UPSTREAM_STATE_DIR": str(tmp_path / "state")}
    result = CliRunner().invoke(app, ["spike", "--record", str(tmp_path / "x.json")], env=env)
    assert result.exit_code == 1 and "a recording needs a DataHub server" in result.output
    assert "DATAHUB_GMS_URL" in result.output


def test_recorded_spikes_from_real_datahubs_replay_to_their_verdicts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Exchanges recorded from a real DataHub (tests/recorded/README.md), each replayed to the
    verdicts it reached there. One test over the folder, not one per file: with none sent back
    yet it still runs (and checks the folder's note says so), rather than being skipped."""
    files = sorted(RECORDED.glob("*.json"))
    note = (RECORDED / "README.md").read_text()
    assert ("None has been sent back yet" in note) == (not files), "update tests/recorded/README.md"
    for path in files:
        record = json.loads(path.read_text())
        assert _replay(record, monkeypatch) == record["_spike"]["results"], path.name
