"""The investigation's window onto DataHub and the warehouse: the `Probe` the pure core walks.

Reads: one per node for its schema, profile and siblings history (and one more for its
warehouse twin's, where a warehouse ingestion records schema changes), one per hop for its
assertion runs; on a server, schema changes come from its timeline and profiles from its
timeseries. Counted by the graph's counter and stopped by the run's read budget. Lineage is
read as it stood before the symptom.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from upstream_dagster.datahub.assertions import (
    assertion_column,
    assertion_label,
    check_kind,
    process_runs,
)
from upstream_dagster.datahub.model import AspectVersion, Json, Transaction
from upstream_dagster.datahub.node_reads import check_run, code_of, profiles_of
from upstream_dagster.datahub.protocol import MetadataGraph
from upstream_dagster.datahub.timeline import derive
from upstream_dagster.reliability.health import FailingCheck, NodeView, SchemaEvent, Window
from upstream_dagster.reliability.sqlcols import row_columns
from upstream_dagster.reliability.walk import ROWS, BudgetExhausted
from upstream_dagster.spec.urns import entity_type, field_dataset, field_path, relation_of

ColumnEdges = tuple[tuple[tuple[str, str], tuple[str, str]], ...]
# viewProperties: a model's own code (viewLogic) and its compiled SQL (formattedViewLogic).
HISTORY_ASPECTS = ["schemaMetadata", "datasetProfile", "siblings", "viewProperties"]


def read_history(graph: MetadataGraph, urn: str) -> dict[str, list[AspectVersion]]:
    """One node's schema, profile and siblings history: every version in one read where the
    backend keeps aspect versions (Lite); on a server, what it keeps with times (profiles, a
    timeseries) and the current siblings, its schema changes coming from its timeline
    (`schema_changes`), not from reading schema versions one request at a time."""
    return graph.histories(urn, HISTORY_ASPECTS)


def asks_timeline(graph: MetadataGraph, history: dict[str, list[AspectVersion]]) -> bool:
    """Whether a node's schema changes take a timeline request: its history holds no schema
    versions because the backend keeps none to read in one go (a server)."""
    return "schemaMetadata" not in history and not graph.capabilities.aspect_versions


def schema_changes(
    graph: MetadataGraph, urn: str, history: dict[str, list[AspectVersion]]
) -> tuple[SchemaEvent, ...]:
    """Schema changes of one node: derived from the versions read with its history, or asked
    of the server's timeline (one request) when the history holds no schema versions."""
    if asks_timeline(graph, history):
        return _events(graph.timeline(urn, ["TECHNICAL_SCHEMA"]))
    return schema_events(urn, history.get("schemaMetadata", []))


def schema_events(urn: str, versions: Sequence[AspectVersion]) -> tuple[SchemaEvent, ...]:
    return _events(derive(urn, {"schemaMetadata": list(versions)}, ["TECHNICAL_SCHEMA"]))


def _events(transactions: Sequence[Transaction]) -> tuple[SchemaEvent, ...]:
    out = []
    for tx in transactions:
        for e in tx.events:
            if e.category != "TECHNICAL_SCHEMA":
                continue
            p = e.parameters
            out.append(
                SchemaEvent(
                    tx.timestamp_ms,
                    e.operation,
                    str(p.get("fieldPath", "")),
                    str(p.get("nativeType") or p.get("newNativeType") or ""),
                    p.get("oldFieldPath"),
                    str(p.get("oldNativeType") or ""),
                )
            )
    return tuple(out)


# A dbt entity and its warehouse table record the same change from two ingestions; within this
# long of each other, the same change of the same column is one change.
SAME_CHANGE_MS = 24 * 3600 * 1000


def merged_schema_events(
    own: Sequence[SchemaEvent], twins: Sequence[Sequence[SchemaEvent]] = ()
) -> tuple[SchemaEvent, ...]:
    """One asset's schema changes: its own, plus those only its warehouse twins recorded. A
    twin's event that matches one of the asset's own (same operation and column, the nearest
    within a day, each matched once) is the same change, kept at the earlier sighting; a change
    that recurs later is a new event, not a duplicate."""

    def key(e: SchemaEvent) -> tuple[str, str, str]:
        return (e.operation, e.column.lower(), (e.old_column or "").lower())

    merged = list(own)
    seen_by: list[set[int]] = [{0} for _ in own]  # which sources recorded each merged event
    for source, events in enumerate(twins, start=1):
        for e in events:
            near = [
                i
                for i, m in enumerate(merged)
                if source not in seen_by[i]
                and key(m) == key(e)
                and abs(m.at_ms - e.at_ms) <= SAME_CHANGE_MS
            ]
            if not near:
                merged.append(e)
                seen_by.append({source})
                continue
            i = min(near, key=lambda j: abs(merged[j].at_ms - e.at_ms))
            seen_by[i].add(source)
            if e.at_ms < merged[i].at_ms:
                merged[i] = e
    return tuple(sorted(merged, key=lambda e: (e.at_ms, e.operation, e.column)))


def _is_freshness(info: Json) -> bool:
    custom = info.get("customAssertion") or {}
    text = f"{info.get('type', '')} {custom.get('type', '')} {info.get('description', '')}"
    return "freshness" in text.lower()


class GraphProbe:
    def __init__(
        self,
        graph: MetadataGraph,
        window: Window,
        budget: int,
        forensic: Callable[[str, set[str]], tuple[str | None, list[Any], str]] | None = None,
        lineage_as_of_ms: int | None = None,
        seed: dict[str, dict[str, list[AspectVersion]]] | None = None,
        relation: Callable[[str], str] = relation_of,
    ) -> None:
        self.graph, self.window, self.budget = graph, window, budget
        self._forensic = forensic
        self._relation = relation
        self.as_of = lineage_as_of_ms
        self._start = graph.counter.calls
        self._twin: dict[str, str] = {}  # secondary -> primary
        self._edges: tuple[dict[str, tuple[str, ...]], ColumnEdges] | None = None
        self._runs: dict[str, int] | None = None
        self.queries: list[tuple[str, str]] = []  # (statement, outcome)
        self._history: dict[str, dict[str, list[AspectVersion]]] = dict(seed or {})
        self._schema: dict[str, tuple[SchemaEvent, ...]] = {}

    @property
    def reads(self) -> int:
        return self.graph.counter.calls - self._start

    def _spend(self) -> None:
        if self.reads >= self.budget:
            raise BudgetExhausted()

    def _prime(self, urn: str) -> str:
        return self._twin.get(urn, urn)

    def _note_siblings(self, urn: str, sib: Json | None) -> None:
        if sib and sib.get("siblings"):
            other = str(sib["siblings"][0])
            if sib.get("primary", False):
                self._twin[other] = urn
            else:
                self._twin[urn] = other

    def _lineage(self) -> tuple[dict[str, tuple[str, ...]], ColumnEdges]:
        if self._edges is None:
            self._spend()
            edges = self.graph.lineage_edges(self.as_of)
            urns = sorted({u for e in edges for u in (e.upstream, e.downstream)})
            self._spend()
            logic: dict[str, str] = {}
            for urn, aspects in self.graph.get_aspects(
                urns, ["siblings", "viewProperties"]
            ).items():
                self._note_siblings(urn, aspects.get("siblings"))
                # the compiled SQL: a model's own code is Jinja, which no SQL parser reads
                view = aspects.get("viewProperties") or {}
                sql = view.get("formattedViewLogic") or view.get("viewLogic")
                if sql:
                    logic[urn] = str(sql)
            ups: dict[str, set[str]] = {}
            cols: set[tuple[tuple[str, str], tuple[str, str]]] = set()
            for e in edges:
                up, down = self._prime(e.upstream), self._prime(e.downstream)
                if up != down:
                    ups.setdefault(down, set()).add(up)
                for c in e.columns:
                    a, b = field_dataset(c.upstream_field), field_dataset(c.downstream_field)
                    if a and b:
                        cols.add(
                            (
                                (self._prime(a), field_path(c.upstream_field)),
                                (self._prime(b), field_path(c.downstream_field)),
                            )
                        )
            # The columns a model decides its rows with feed every column it has ("*").
            for urn, sql in logic.items():
                down = self._prime(urn)
                for name in row_columns(sql):
                    cols |= {((up, name), (down, ROWS)) for up in ups.get(down, ())}
            self._edges = ({k: tuple(sorted(v)) for k, v in ups.items()}, tuple(sorted(cols)))
        return self._edges

    def upstreams(self, urn: str) -> tuple[str, ...]:
        return self._lineage()[0].get(urn, ())

    def column_edges(self) -> ColumnEdges:
        return self._lineage()[1]

    def _last_runs(self) -> dict[str, int]:
        if self._runs is None:
            self._spend()
            runs: dict[str, int] = {}
            for output, ts in process_runs(self.graph):
                key = self._prime(output)
                runs[key] = max(runs.get(key, 0), ts)
            self._runs = runs
        return self._runs

    def history(self, urn: str) -> dict[str, list[AspectVersion]]:
        """One node's schema, profile and siblings history: one read per node, as DataHub's
        per-entity timeline and timeseries APIs answer it (cached: a node is read once)."""
        if urn not in self._history:
            self._spend()
            self._history[urn] = read_history(self.graph, urn)
        return self._history[urn]

    def schema(self, urn: str) -> tuple[SchemaEvent, ...]:
        """One node's schema changes (cached; a server's timeline costs one read)."""
        if urn not in self._schema:
            history = self.history(urn)
            if asks_timeline(self.graph, history):
                self._spend()
            self._schema[urn] = schema_changes(self.graph, urn, history)
        return self._schema[urn]

    def observe(self, urns: tuple[str, ...], with_runs: bool = True) -> dict[str, NodeView]:
        found = {u: self.history(u) for u in urns}
        for urn in urns:
            sib = found.get(urn, {}).get("siblings")
            self._note_siblings(urn, sib[-1].value if sib else None)
        twins = {t: p for t, p in self._twin.items() if p in urns}
        # A warehouse ingestion (Snowflake, BigQuery, ...) updates the table, not its dbt twin:
        # a vendor's rename shows first in the twin's schema history, so read that too.
        for twin in sorted(twins):
            self.history(twin)
        self._spend()
        runs = self.graph.assertion_runs([*urns, *twins], latest_only=False)
        latest: dict[str, Any] = {}
        for run in runs:
            latest[run.assertion_urn] = run
        failing = [
            r
            for r in latest.values()
            if r.result != "SUCCESS" and r.timestamp_ms > self.window.last_good_ms
        ]
        infos: dict[str, dict[str, Json]] = {}
        if failing:
            self._spend()
            infos = self.graph.get_aspects([r.assertion_urn for r in failing], ["assertionInfo"])
        last_runs = self._last_runs() if with_runs else {}
        views = {}
        for urn in urns:
            checks = []
            for r in failing:
                if self._prime(r.asserted_urn) != urn:
                    continue
                info = infos.get(r.assertion_urn, {}).get("assertionInfo") or {}
                native = dict(r.native)
                checks.append(
                    FailingCheck(
                        r.assertion_urn,
                        assertion_label(info),
                        assertion_column(info) or native.get("column"),
                        r.timestamp_ms,
                        native.get("message", ""),
                        _is_freshness(info),
                        check_kind(info),
                    )
                )
            mine = [t for t, p in sorted(twins.items()) if p == urn]
            histories = [found[urn], *(self.history(t) for t in mine)]
            profiles = next(
                (profiles_of(h["datasetProfile"]) for h in histories if h.get("datasetProfile")),
                (),
            )
            views[urn] = NodeView(
                urn,
                relation_of(urn),
                tuple(sorted(checks, key=lambda c: c.assertion)),
                merged_schema_events(self.schema(urn), [self.schema(t) for t in mine]),
                profiles,
                last_runs.get(urn),
                tuple(check_run(r) for r in runs if self._prime(r.asserted_urn) == urn),
                *code_of(histories),
            )
        return views

    def relation(self, urn: str) -> str:
        return self._relation(urn)

    def forensic(self, sql: str, relations: set[str]) -> tuple[str | None, list[Any], str]:
        if self._forensic is None:
            return None, [], "no warehouse is configured for forensic queries"
        ran, rows, problem = self._forensic(sql, relations)
        self.queries.append((ran or sql, problem or f"{len(rows)} rows"))
        return ran, rows, problem

    def consumers(self, urn: str) -> tuple[str, ...]:
        """Dashboards and charts downstream of ``urn`` (the blast radius), nearest first.

        DataHub Lite keeps no usage statistics, so they are ranked by hops, then by URN."""
        ups = self._lineage()[0]
        downs: dict[str, set[str]] = {}
        for down, parents in ups.items():
            for up in parents:
                downs.setdefault(up, set()).add(down)
        seen = {urn: 0}
        frontier = [urn]
        while frontier:
            nxt = []
            for node in frontier:
                for d in sorted(downs.get(node, ())):
                    if d not in seen:
                        seen[d] = seen[node] + 1
                        nxt.append(d)
            frontier = nxt
        hits = [u for u in seen if entity_type(u) in ("dashboard", "chart")]
        return tuple(sorted(hits, key=lambda u: (seen[u], u)))
