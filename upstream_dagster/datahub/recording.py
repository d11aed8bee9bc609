"""Record every read an investigation makes, and serve them back without DataHub.

`RecordingGraph` wraps any `MetadataGraph` and keeps each read with what it returned;
`ReplayGraph` answers the same reads from such a record, so the investigation's own code runs
again on exactly what it saw. A read the record does not hold is an error that says so: the
reasoning changed what it reads, and the record must be made again.

Times are kept relative to the failing event (``"t-3600000"``: an hour before it), so a record
holds no wall-clock time: `relative_times` and `absolute_times` move every time field by the
same amount, which keeps every difference and every comparison the reasoning makes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from upstream_dagster.datahub.model import (
    AspectVersion,
    AssertionRun,
    CallCounter,
    ChangeEvent,
    ColumnEdge,
    Json,
    LineageEdge,
    Receipt,
    SearchQuery,
    Transaction,
)
from upstream_dagster.datahub.protocol import MetadataGraph
from upstream_dagster.datahub.timeline import ALL_CATEGORIES
from upstream_dagster.errors import UpstreamError

# Keys whose integer value is an epoch-millisecond time, in DataHub's aspects and in the
# records' own fields. Anything smaller than 1e11 (about 1973) is a duration or a count.
TIME_KEYS = frozenset(
    {
        "time",
        "timestampMillis",
        "lastObserved",
        "lastUpdatedTimestamp",
        "created_ms",
        "timestamp_ms",
        "as_of_ms",
        "since_ms",
        "symptom_ms",
        "last_good_ms",
    }
)
_EPOCH_FLOOR = 10**11


def _map_times(value: Any, fn: Any) -> Any:
    """A copy of a JSON value with ``fn`` applied to the value of every time field."""
    if isinstance(value, dict):
        return {k: fn(v) if k in TIME_KEYS else _map_times(v, fn) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_times(v, fn) for v in value]
    return value


def relative_times(value: Any, anchor: int) -> Any:
    """Every epoch time written as ``"t+N"``/``"t-N"``: N milliseconds after/before ``anchor``
    (the failing event). Small integers (unset times, durations) are left alone."""

    def rel(v: Any) -> Any:
        return f"t{v - anchor:+d}" if type(v) is int and abs(v) >= _EPOCH_FLOOR else v

    return _map_times(value, rel)


def absolute_times(value: Any, anchor: int) -> Any:
    """The inverse of `relative_times`, placing t = 0 at ``anchor``."""

    def back(v: Any) -> Any:
        return anchor + int(v[1:]) if isinstance(v, str) and v[:2] in ("t+", "t-") else v

    return _map_times(value, back)


def _edge(e: LineageEdge) -> Json:
    return {
        "upstream": e.upstream,
        "downstream": e.downstream,
        "via": e.via,
        "kind": e.kind,
        "columns": [[c.upstream_field, c.downstream_field] for c in e.columns],
    }


ENCODE = {
    "get_aspects": lambda r: r,
    "search": list,
    "lineage_edges": lambda r: [_edge(e) for e in r],
    # Plain records: their fields as JSON (tuples become lists when the record is written).
    "aspect_history": lambda r: [asdict(v) for v in r],
    "histories": lambda r: {a: [asdict(v) for v in vs] for a, vs in r.items()},
    "assertion_runs": lambda r: [asdict(x) for x in r],
    "timeline": lambda r: [asdict(t) for t in r],
}
DECODE = {
    "get_aspects": lambda r: r,
    "search": list,
    "lineage_edges": lambda r: [
        LineageEdge(
            e["upstream"],
            e["downstream"],
            e["via"],
            e["kind"],
            tuple(ColumnEdge(a, b) for a, b in e["columns"]),
        )
        for e in r
    ],
    "aspect_history": lambda r: [AspectVersion(**v) for v in r],
    "histories": lambda r: {a: [AspectVersion(**v) for v in vs] for a, vs in r.items()},
    "assertion_runs": lambda r: [
        AssertionRun(**{**x, "native": tuple(tuple(p) for p in x["native"])}) for x in r
    ],
    "timeline": lambda r: [
        Transaction(**{**t, "events": tuple(ChangeEvent(**e) for e in t["events"])}) for t in r
    ],
}


def _key(call: str, args: Json) -> str:
    return json.dumps([call, args], sort_keys=True)


class _Reads:
    """The protocol's reads, each named with its arguments; subclasses decide how it is
    answered (``live`` calls the real graph)."""

    def _read(self, call: str, args: Json, live: Any) -> Any:
        raise NotImplementedError

    def get_aspects(
        self, urns: Sequence[str], aspects: Sequence[str]
    ) -> dict[str, dict[str, Json]]:
        args = {"urns": list(urns), "aspects": list(aspects)}
        return self._read("get_aspects", args, lambda g: g.get_aspects(urns, aspects))  # type: ignore[no-any-return]

    def search(self, query: SearchQuery) -> list[str]:
        args = {k: list(v) if isinstance(v, tuple) else v for k, v in vars(query).items()}
        return self._read("search", args, lambda g: g.search(query))  # type: ignore[no-any-return]

    def lineage_edges(self, as_of_ms: int | None = None) -> list[LineageEdge]:
        return self._read(
            "lineage_edges", {"as_of_ms": as_of_ms}, lambda g: g.lineage_edges(as_of_ms)
        )  # type: ignore[no-any-return]

    def aspect_history(self, urn: str, aspect: str) -> list[AspectVersion]:
        args = {"urn": urn, "aspect": aspect}
        return self._read("aspect_history", args, lambda g: g.aspect_history(urn, aspect))  # type: ignore[no-any-return]

    def _histories(self, urn: str, aspects: Sequence[str]) -> dict[str, list[AspectVersion]]:
        args = {"urn": urn, "aspects": list(aspects)}
        return self._read("histories", args, lambda g: g.histories(urn, aspects))  # type: ignore[no-any-return]

    def timeline(
        self,
        urn: str,
        categories: Sequence[str] = ALL_CATEGORIES,
        start_ms: int | None = None,
        end_ms: int | None = None,
    ) -> list[Transaction]:
        args = {"urn": urn, "categories": list(categories), "start_ms": start_ms, "end_ms": end_ms}
        return self._read(  # type: ignore[no-any-return]
            "timeline", args, lambda g: g.timeline(urn, categories, start_ms, end_ms)
        )

    def assertion_runs(
        self,
        urns: Sequence[str] | None = None,
        since_ms: int | None = None,
        latest_only: bool = True,
    ) -> list[AssertionRun]:
        args = {
            "urns": None if urns is None else list(urns),
            "since_ms": since_ms,
            "latest_only": latest_only,
        }
        return self._read(  # type: ignore[no-any-return]
            "assertion_runs", args, lambda g: g.assertion_runs(urns, since_ms, latest_only)
        )


class RecordingGraph(_Reads):
    """A `MetadataGraph` that keeps every read it passes on: call, arguments, result and the
    DataHub calls it cost. Writes pass through and are not recorded."""

    def __init__(self, graph: MetadataGraph) -> None:
        self.inner = graph
        self.counter: CallCounter = graph.counter
        self.reads: list[Json] = []
        if hasattr(graph, "histories"):
            self.histories = self._histories

    def _read(self, call: str, args: Json, live: Any) -> Any:
        before = self.counter.calls
        result = live(self.inner)
        self.reads.append(
            {
                "call": call,
                "args": args,
                "calls": self.counter.calls - before,
                "result": ENCODE[call](result),
            }
        )
        return result

    def write_aspect(self, urn: str, aspect: str, value: Json) -> Receipt:
        return self.inner.write_aspect(urn, aspect, value)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def close(self) -> None:
        self.inner.close()


class ReplayGraph(_Reads):
    """Answers reads from a record, costing what they cost when recorded; writes nothing."""

    def __init__(self, reads: Sequence[Json]) -> None:
        self.counter = CallCounter()
        self._answers: dict[str, Json] = {}
        for read in reads:
            self._answers.setdefault(_key(read["call"], read["args"]), read)
        if any(r["call"] == "histories" for r in reads):
            self.histories = self._histories

    def _read(self, call: str, args: Json, live: Any) -> Any:
        read = self._answers.get(_key(call, args))
        if read is None:
            raise UpstreamError(
                f"the record holds no {call} read for {json.dumps(args, sort_keys=True)[:200]}",
                "the investigation now reads something it did not when the record was made: "
                "make the records again with `make eval`",
            )
        self.counter.add(call, int(read["calls"]))
        return DECODE[call](read["result"])

    def write_aspect(self, urn: str, aspect: str, value: Json) -> Receipt:
        return Receipt(urn, aspect, False, "a replay writes nothing")

    def close(self) -> None:
        pass
