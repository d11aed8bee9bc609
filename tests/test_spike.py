"""`upstream spike` over the real embedded DataHub (a live GMS run is in test_gms_live.py):
PASS only for what reads back, PARTIAL for what was accepted but did not, FAIL for an error."""

from __future__ import annotations

from typing import Any

from typer.testing import CliRunner

from upstream_dagster.cli import app
from upstream_dagster.datahub import open_graph
from upstream_dagster.datahub.model import Receipt
from upstream_dagster.datahub.spike import FAIL, PARTIAL, PASS, spike
from upstream_dagster.settings import Settings


def test_spike_passes_every_surface_on_the_embedded_datahub(estate: Settings) -> None:
    result = CliRunner().invoke(app, ["spike"])
    assert result.exit_code == 0, result.output
    assert "17/17 surfaces PASS" in result.output
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
