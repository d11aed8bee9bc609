"""An investigation's record: every read it made and what came back, so it replays without
DataHub, a warehouse or a model key. Nothing in a record is a stored conclusion that replay
reads back: ``live`` is there to compare against, never as an input."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from upstream_dagster.datahub.incidents import parse_key
from upstream_dagster.datahub.model import Capabilities
from upstream_dagster.datahub.recording import relative_times
from upstream_dagster.reliability.remediation import Remedy
from upstream_dagster.reliability.verdict import Sim, Verdict
from upstream_dagster.state.records import FORMAT, encode_value

Forensic = Callable[[str, set[str]], tuple[str | None, list[Any], str]]


class ForensicRecorder:
    """Runs forensic SQL through ``run`` and keeps each statement with its rows."""

    def __init__(self, run: Forensic) -> None:
        self.run = run
        self.entries: list[dict[str, Any]] = []

    def __call__(self, sql: str, relations: set[str]) -> tuple[str | None, list[Any], str]:
        ran, rows, problem = self.run(sql, relations)
        self.entries.append(
            {
                "sql": sql,
                "relations": sorted(relations),
                "ran": ran,
                "rows": [[encode_value(v) for v in row] for row in rows],
                "problem": problem,
            }
        )
        return ran, rows, problem


def conclusion(v: Verdict) -> dict[str, Any]:
    """What a verdict concluded, in the record's terms (compared, never replayed from)."""
    return {
        "concluded": v.concluded,
        "cause": v.cause,
        "column": v.column,
        "failure_class": v.failure_class,
        "confidence": v.confidence,
        "hypotheses": [[h.cause, h.column, h.failure_class, s.confidence] for h, s in v.ranked],
        "reads": v.reads,
        "memory_used": v.memory_used,
    }


def make_record(
    key: str,
    capabilities: Capabilities,
    reads: dict[str, list[dict[str, Any]]],
    forensic: list[dict[str, Any]],
    fix: Remedy,
    sim: Sim,
    v: Verdict,
) -> dict[str, Any]:
    """``reads`` by step (``triage``, ``walk``), times relative to the failing event;
    ``capabilities`` are the backend's that answered them (replay answers the same way)."""
    assertion, anchor = parse_key(key)
    body = {"reads": reads, "forensic": forensic}
    return {
        "format": FORMAT,
        "assertion": assertion,
        "capabilities": asdict(capabilities),
        **relative_times(body, anchor),
        "simulation": sim._asdict(),
        "remedy": asdict(fix),
        "live": conclusion(v),
    }
