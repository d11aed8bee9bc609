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
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from upstream_dagster.conformance.proposals import Change
from upstream_dagster.datahub.model import (
    LITE,
    Answer,
    AspectVersion,
    AssertionRun,
    CallCounter,
    Capabilities,
    ChangeEvent,
    ColumnEdge,
    History,
    Json,
    Lineage,
    LineageEdge,
    Receipt,
    SearchQuery,
    Shape,
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


def _answer(r: Answer[Any], items: list[Any]) -> Any:
    """A read that carries a fallback keeps it; one without is stored as its plain list."""
    return {"items": items, "fallback": r.fallback} if r.fallback else items


def _unanswer(raw: Any, decode: Any) -> Answer[Any]:
    if isinstance(raw, dict):
        return Answer(tuple(decode(x) for x in raw["items"]), raw.get("fallback"))
    return Answer(tuple(decode(x) for x in raw))


def _unedge(e: Json) -> LineageEdge:
    columns = tuple(ColumnEdge(a, b) for a, b in e["columns"])
    return LineageEdge(e["upstream"], e["downstream"], e["via"], e["kind"], columns)


ENCODE: dict[str, Callable[[Any], Any]] = {
    "get_aspects": lambda r: r,
    "search": list,
    "lineage_edges": lambda r: _answer(r, [_edge(e) for e in r]),
    "lineage": lambda r: _answer(r, [_edge(e) for e in r]),
    # Plain records: their fields as JSON (tuples become lists when the record is written).
    "aspect_history": lambda r: _answer(r, [asdict(v) for v in r]),
    "histories": lambda r: {a: [asdict(v) for v in vs] for a, vs in r.items()},
    "assertion_runs": lambda r: [asdict(x) for x in r],
    "timeline": lambda r: [asdict(t) for t in r],
}
DECODE: dict[str, Callable[[Any], Any]] = {
    "get_aspects": lambda r: r,
    "search": list,
    "lineage_edges": lambda r: _unanswer(r, _unedge),
    "lineage": lambda r: _unanswer(r, _unedge),
    "aspect_history": lambda r: _unanswer(r, lambda v: AspectVersion(**v)),
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
        self, urns: Sequence[str], aspects: Sequence[str], shape: Shape | None = None
    ) -> dict[str, dict[str, Json]]:
        # recorded whole, as the server answered; shaped after, on replay and live alike
        args = {"urns": list(urns), "aspects": list(aspects)}
        found: dict[str, dict[str, Json]] = self._read(
            "get_aspects", args, lambda g: g.get_aspects(urns, aspects)
        )
        if shape is None:
            return found
        return {u: {n: shape(n, v) for n, v in a.items()} for u, a in found.items()}

    def search(self, query: SearchQuery) -> list[str]:
        args = {k: list(v) if isinstance(v, tuple) else v for k, v in vars(query).items()}
        return self._read("search", args, lambda g: g.search(query))  # type: ignore[no-any-return]

    def lineage(self, urns: Sequence[str], direction: str, as_of_ms: int | None = None) -> Lineage:
        args = {"urns": list(urns), "direction": direction, "as_of_ms": as_of_ms}
        return self._read(  # type: ignore[no-any-return]
            "lineage", args, lambda g: g.lineage(urns, direction, as_of_ms)
        )

    def lineage_edges(self, as_of_ms: int | None = None) -> Lineage:
        return self._read(  # type: ignore[no-any-return]
            "lineage_edges", {"as_of_ms": as_of_ms}, lambda g: g.lineage_edges(as_of_ms)
        )

    def aspect_history(self, urn: str, aspect: str) -> History:
        args = {"urn": urn, "aspect": aspect}
        return self._read("aspect_history", args, lambda g: g.aspect_history(urn, aspect))  # type: ignore[no-any-return]

    def histories(self, urn: str, aspects: Sequence[str]) -> dict[str, list[AspectVersion]]:
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
        self.transport = graph.transport
        self.capabilities: Capabilities = graph.capabilities
        self.counter: CallCounter = graph.counter
        self.reads: list[Json] = []

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

    @property
    def server(self) -> str:
        return self.inner.server

    def operation(self, surface: str) -> str:
        return self.inner.operation(surface)

    def write_aspect(self, urn: str, aspect: str, value: Json) -> Receipt:
        return self.inner.write_aspect(urn, aspect, value)

    def apply_change(self, urn: str, change: Change) -> Receipt:
        return self.inner.apply_change(urn, change)

    def delete_aspect(self, urn: str, aspect: str) -> Receipt:
        return self.inner.delete_aspect(urn, aspect)

    def close(self) -> None:
        self.inner.close()


class ReplayGraph(_Reads):
    """Answers reads from a record, costing what they cost when recorded; writes nothing.

    ``capabilities`` are the recorded backend's (a record made on DataHub Lite when not said)."""

    transport = "replay"

    def __init__(self, reads: Sequence[Json], capabilities: Capabilities = LITE) -> None:
        self.counter = CallCounter()
        self.capabilities = capabilities
        self._answers: dict[str, Json] = {}
        for read in reads:
            self._answers.setdefault(_key(read["call"], read["args"]), read)

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

    server = "a recorded investigation (replay)"

    def operation(self, surface: str) -> str:
        return "answered from the record"

    def write_aspect(self, urn: str, aspect: str, value: Json) -> Receipt:
        return Receipt(urn, aspect, False, "a replay writes nothing")

    def apply_change(self, urn: str, change: Change) -> Receipt:
        return Receipt(urn, change.kind, False, "a replay writes nothing")

    def delete_aspect(self, urn: str, aspect: str) -> Receipt:
        return Receipt(urn, aspect, False, "a replay writes nothing")

    def close(self) -> None:
        pass
