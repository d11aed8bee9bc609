"""An investigation's record: every read it made and what came back, replayable without
DataHub, a warehouse or a model key.

The reliability job writes one per incident to ``.upstream/records/``; the eval runner keeps them
in ``evals/records/``. `replay` runs triage and the lineage walk again through the same code as
the live run, on a `ReplayGraph` and the recorded forensic rows, then the critic's scoring with
the recorded sandbox result. Nothing in a record is a stored conclusion that replay reads back:
``live`` is there to compare against, never as an input.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import asdict
from decimal import Decimal
from pathlib import Path
from typing import Any

from upstream_dagster.datahub.incidents import parse_key
from upstream_dagster.datahub.recording import ReplayGraph, absolute_times, relative_times
from upstream_dagster.errors import UpstreamError

FORMAT = 1
# Where t = 0 lands on replay. Any instant works: the reasoning only compares times.
REPLAY_ANCHOR_MS = 1_800_000_000_000


def _value(v: Any) -> Any:
    if v is None or isinstance(v, bool | int | float | str):
        return v
    if isinstance(v, dt.datetime):
        return {"datetime": v.isoformat()}
    if isinstance(v, dt.date):
        return {"date": v.isoformat()}
    if isinstance(v, Decimal):
        return {"decimal": str(v)}
    return {"text": str(v)}


def _unvalue(v: Any) -> Any:
    if not isinstance(v, dict):
        return v
    (kind, text), *_ = v.items()
    return {
        "datetime": dt.datetime.fromisoformat,
        "date": dt.date.fromisoformat,
        "decimal": Decimal,
    }.get(kind, str)(text)


class ForensicRecorder:
    """Runs forensic SQL through ``run`` and keeps each statement with its rows."""

    def __init__(self, run: Callable[[str, set[str]], tuple[str | None, list[Any], str]]):
        self.run = run
        self.entries: list[dict[str, Any]] = []

    def __call__(self, sql: str, relations: set[str]) -> tuple[str | None, list[Any], str]:
        ran, rows, problem = self.run(sql, relations)
        self.entries.append(
            {
                "sql": sql,
                "relations": sorted(relations),
                "ran": ran,
                "rows": [[_value(v) for v in row] for row in rows],
                "problem": problem,
            }
        )
        return ran, rows, problem


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
        rows = [tuple(_unvalue(v) for v in row) for row in e["rows"]]
        return e["ran"], rows, e["problem"]


def conclusion(v: Any) -> dict[str, Any]:
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


def make_record(t: Any, g: Any, fix: Any, sim: tuple[bool, bool, str], v: Any) -> dict[str, Any]:
    assertion, anchor = parse_key(t.key)
    body = {
        "reads": {"triage": list(t.record), "walk": list(g.record)},
        "forensic": list(g.forensic),
    }
    return {
        "format": FORMAT,
        "assertion": assertion,
        **relative_times(body, anchor),
        "simulation": {"ran": sim[0], "passed": sim[1], "message": sim[2]},
        "remedy": asdict(fix),
        "live": conclusion(v),
    }


def record_path(settings: Any, key: str) -> Path:
    """Where the reliability job keeps an incident's record."""
    return Path(settings.state_dir) / "records" / f"{key}.json"


def dumps(record: dict[str, Any]) -> str:
    return json.dumps(record, indent=1, sort_keys=True) + "\n"


def write(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(dumps(record))
    tmp.replace(path)


def replay(record: dict[str, Any], spec: Any) -> Any:
    """The verdict the recorded reads lead to, recomputed by the live run's own code."""
    from upstream_dagster.defs.incident_ops import gather_on, triage_on, verdict_step
    from upstream_dagster.reliability.remediation import Remedy

    if record.get("format") != FORMAT:
        raise UpstreamError(
            f"record format {record.get('format')!r} is not {FORMAT}",
            "make the records again with `make eval`",
        )
    body = absolute_times(
        {"reads": record["reads"], "forensic": record["forensic"]}, REPLAY_ANCHOR_MS
    )
    key = f"{record['assertion'].removeprefix('urn:li:assertion:')}@{REPLAY_ANCHOR_MS}"
    # Two graphs, as live: triage and the walk each open DataHub and count their own reads.
    t = triage_on(ReplayGraph(body["reads"]["triage"]), spec, key)
    g = gather_on(ReplayGraph(body["reads"]["walk"]), spec, t, ForensicReplay(body["forensic"]))
    r = record["remedy"]
    fix = Remedy(**{k: tuple(v) if isinstance(v, list) else v for k, v in r.items()})
    s = record["simulation"]
    return verdict_step(spec, t, g, fix, (s["ran"], s["passed"], s["message"]))


def load(path: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise UpstreamError(
            f"cannot read the record {path}: {exc}", "make the records again with `make eval`"
        ) from exc
    return data
