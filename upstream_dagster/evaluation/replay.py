"""Replay an investigation's record: triage and the lineage walk run again through the live
run's own code, on a `ReplayGraph` and the recorded forensic rows, then the critic's scoring
with the recorded sandbox result. No DataHub, no warehouse, no model key."""

from __future__ import annotations

from typing import Any

from upstream_dagster.datahub.model import Capabilities
from upstream_dagster.datahub.recording import ReplayGraph, absolute_times
from upstream_dagster.errors import UpstreamError
from upstream_dagster.reliability.remediation import Remedy
from upstream_dagster.reliability.verdict import Sim, Verdict
from upstream_dagster.services.investigation import gather_on, triage_on, verdict_step
from upstream_dagster.spec.models import EstateSpec
from upstream_dagster.state.records import FORMAT, decode_value

# Where t = 0 lands on replay. Any instant works: the reasoning only compares times.
REPLAY_ANCHOR_MS = 1_800_000_000_000


class ForensicReplay:
    def __init__(self, entries: list[dict[str, Any]]):
        self.answers = {(e["sql"], tuple(e["relations"])): e for e in entries}

    def __call__(self, sql: str, relations: set[str]) -> tuple[str | None, list[Any], str]:
        e = self.answers.get((sql, tuple(sorted(relations))))
        if e is None:
            raise UpstreamError(
                f"the record holds no forensic query {sql[:120]!r}",
                "the investigation now asks the warehouse something new: make the records "
                "again with `make eval`",
            )
        rows = [tuple(decode_value(v) for v in row) for row in e["rows"]]
        return e["ran"], rows, e["problem"]


def replay(record: dict[str, Any], spec: EstateSpec) -> Verdict:
    """The verdict the recorded reads lead to, recomputed by the live run's own code."""
    if record.get("format") != FORMAT:
        raise UpstreamError(
            f"record format {record.get('format')!r} is not {FORMAT}",
            "make the records again with `make eval`",
        )
    body = absolute_times(
        {"reads": record["reads"], "forensic": record["forensic"]}, REPLAY_ANCHOR_MS
    )
    key = f"{record['assertion'].removeprefix('urn:li:assertion:')}@{REPLAY_ANCHOR_MS}"
    recorded = record.get("capabilities")
    caps = {"capabilities": Capabilities(**recorded)} if recorded else {}
    # Two graphs, as live: triage and the walk each read DataHub and count their own reads.
    t = triage_on(ReplayGraph(body["reads"]["triage"], **caps), spec, key)
    walk = ReplayGraph(body["reads"]["walk"], **caps)
    g = gather_on(walk, spec, t, ForensicReplay(body["forensic"]))
    r = record["remedy"]
    fix = Remedy(**{k: tuple(v) if isinstance(v, list) else v for k, v in r.items()})  # type: ignore[arg-type]
    return verdict_step(spec, t, g, fix, Sim(**record["simulation"]))
