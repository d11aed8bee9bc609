"""The `lite` backend: DataHub Lite (SQLite engine, WAL) as the embedded DataHub.

Lite stores every aspect with its history but offers no lineage, search, timeline or timeseries
ordering. Those are read here with SQL over Lite's own ``metadata_aspect_v2`` table on a separate
connection; writes go through Lite's own ``write`` so its versioning rules apply. Every SQL
statement counts as one DataHub call. Lite is not thread-safe, so one lock guards both handles;
other processes are kept safe by SQLite's WAL and busy timeout.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from upstream_dagster.conformance.proposals import Change
from upstream_dagster.datahub import _sdk, timeline
from upstream_dagster.datahub import edges as edge_parse
from upstream_dagster.datahub.changes import WRITERS, current
from upstream_dagster.datahub.lite_sql import BROWSE_ASPECTS, EDGES, SEEN, TABLE, marks, search_sql
from upstream_dagster.datahub.mcp import build_mcp
from upstream_dagster.datahub.model import (
    LITE,
    Answer,
    AspectVersion,
    AssertionRun,
    CallCounter,
    History,
    Json,
    Lineage,
    Receipt,
    SearchQuery,
    Shape,
    Transaction,
)
from upstream_dagster.errors import DataHubUnavailable
from upstream_dagster.spec.urns import name_matches

log = logging.getLogger(__name__)
CHUNK = 20_000  # bound parameters per statement, under SQLite's 32,766 limit
# Above this many URNs, reading the wanted aspects by name (through Upstream's index) and
# filtering beats thousands of primary-key lookups.
SCAN_ABOVE = 2_000
# Lite indexes only (urn, aspect, version). Reads by aspect name (every slice, every search)
# need this one; it changes nothing about how Lite stores or versions aspects.
INDEX = f"CREATE INDEX IF NOT EXISTS upstream_aspect_version_idx ON {TABLE} (aspect_name, version)"


def _chunks(items: Sequence[str], size: int = CHUNK) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


LITE_OPERATIONS = {
    "search": "SQL over Lite's aspect table",
    "aspects": "SQL, one statement per 20,000 URNs",
    "lineage": "SQL over the lineage aspects (as of any instant)",
    "timeline": "derived from aspect versions",
    "assertion_runs": "SQL over assertionRunEvent versions",
    "upsert": "Lite write",
    "patch": "read-modify-write through Lite's write",
}


class LiteGraph:
    transport = "lite"
    capabilities = LITE

    def __init__(self, path: Path, *, create: bool = False, sdk_home: Path | None = None) -> None:
        self.path = Path(path)
        # Reads are SQL on Lite's file; the SDK is imported (under sdk_home) on the first write
        self._sdk_home = sdk_home
        self.counter = CallCounter()
        self._lock = threading.RLock()
        self._writer: Any = None
        self._rebuild = False  # a write since opening may change Lite's browse tree (lite_sql)
        if not create and not self.path.exists():
            raise DataHubUnavailable.no_lite_file(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._con = sqlite3.connect(str(self.path), check_same_thread=False, timeout=10)
            self._con.execute("PRAGMA journal_mode=WAL")
            self._con.execute("PRAGMA busy_timeout=10000")
            self._con.create_function("upstream_name_match", 2, name_matches, deterministic=True)
            if create:
                self._ensure_tables()
            found = self._has_table(TABLE)
            if found:
                self._con.execute(INDEX)
                self._con.commit()
        except sqlite3.DatabaseError as exc:
            raise DataHubUnavailable(
                f"{self.path} is not a readable DataHub Lite database (SQLite says: {exc})",
                f"move it aside and run `make demo` to rebuild it (rm {self.path}*)",
            ) from exc
        if not found:
            raise DataHubUnavailable(
                f"{self.path} is an SQLite file but holds no DataHub Lite table ({TABLE})",
                "run `make demo` to ingest the estate into it, or check UPSTREAM_STATE_DIR",
            )

    @property
    def server(self) -> str:
        return f"DataHub Lite (SQLite) at {self.path}"

    def operation(self, surface: str) -> str:
        return LITE_OPERATIONS.get(surface, "Lite write")

    # -- plumbing ---------------------------------------------------------------------------
    def _ensure_tables(self) -> None:
        self._lite()  # Lite creates its own tables and indexes

    @contextmanager
    def _cursor(self, kind: str, sql: str, params: Sequence[Any] = ()) -> Iterator[sqlite3.Cursor]:
        """One counted statement, its rows read under the lock as the cursor yields them."""
        with self._lock:
            self.counter.add(kind)
            yield self._con.execute(sql, params)

    def _q(self, kind: str, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._cursor(kind, sql, params) as cursor:
            return cursor.fetchall()

    def _lite(self) -> Any:
        """DataHub Lite's own handle, opened on first write."""
        with self._lock:
            if self._writer is None:
                _sdk.prepare(self._sdk_home)
                from datahub.lite.lite_util import get_datahub_lite

                self._writer = get_datahub_lite(
                    {
                        "type": "sqlite",
                        "config": {
                            "file": str(self.path),
                            "options": {"journal_mode": "WAL", "busy_timeout": 10000},
                        },
                    }
                )
            return self._writer

    def close(self) -> None:
        with self._lock:
            if self._writer is not None:
                _sdk.close_lite(self._writer, self._rebuild)
                self._writer = None
            self._con.close()

    # -- aspects ----------------------------------------------------------------------------
    def get_aspects(
        self, urns: Sequence[str], aspects: Sequence[str], shape: Shape | None = None
    ) -> dict[str, dict[str, Json]]:
        """Latest value of ``aspects`` for many URNs, in one statement per 20,000 URNs (one
        scan of the aspects above ``SCAN_ABOVE``), each shaped as it is decoded."""
        out: dict[str, dict[str, Json]] = {}

        def kept(aspect: str, metadata: str) -> Json:
            value: Json = orjson.loads(metadata)
            return shape(aspect, value) if shape else value

        wanted = list(dict.fromkeys(urns))
        if len(wanted) > SCAN_ABOVE:
            keep = set(wanted)
            # Rows are decoded as the cursor yields them: fetching them all first held every
            # aspect twice (text and parsed) at a million datasets.
            with self._cursor(
                "aspects",
                f"SELECT urn, aspect_name, metadata FROM {TABLE} WHERE aspect_name IN "
                f"({marks(aspects)}) AND version = 0",
                aspects,
            ) as cursor:
                for urn, aspect, metadata in cursor:
                    if urn in keep:
                        out.setdefault(urn, {})[aspect] = kept(aspect, metadata)
            return out
        for chunk in _chunks(wanted):
            rows = self._q(
                "aspects",
                f"SELECT urn, aspect_name, metadata FROM {TABLE} WHERE version = 0 "
                f"AND urn IN ({marks(chunk)}) AND aspect_name IN ({marks(aspects)})",
                [*chunk, *aspects],
            )
            for urn, aspect, metadata in rows:
                out.setdefault(urn, {})[aspect] = kept(aspect, metadata)
        return out

    def scan(self, entity_type: str, aspects: Sequence[str]) -> dict[str, dict[str, Json]]:
        """Latest ``aspects`` of every entity of a type, in one statement."""
        out: dict[str, dict[str, Json]] = {}
        rows = self._q(
            "scan",
            f"SELECT urn, aspect_name, metadata FROM {TABLE} WHERE version = 0 "
            f"AND urn LIKE ? AND aspect_name IN ({marks(aspects)})",
            [f"urn:li:{entity_type}:%", *aspects],
        )
        for urn, aspect, metadata in rows:
            out.setdefault(urn, {})[aspect] = orjson.loads(metadata)
        return out

    def aspect_history(self, urn: str, aspect: str) -> History:
        return Answer(tuple(self.histories(urn, [aspect]).get(aspect, [])))

    def histories(self, urn: str, aspects: Sequence[str]) -> dict[str, list[AspectVersion]]:
        rows = self._q(
            "history",
            f"SELECT aspect_name, version, createdon, metadata FROM {TABLE} WHERE urn = ? "
            f"AND version > 0 AND aspect_name IN ({marks(aspects)}) ORDER BY version",
            [urn, *aspects],
        )
        out: dict[str, list[AspectVersion]] = {}
        for aspect, version, created, metadata in rows:
            out.setdefault(aspect, []).append(
                AspectVersion(int(version), int(created), orjson.loads(metadata))
            )
        return out

    # -- search -----------------------------------------------------------------------------
    def search(self, query: SearchQuery) -> list[str]:
        """URNs matching ``query`` in one statement; soft-deleted entities are left out."""
        sql, params = search_sql(query)
        return [r[0] for r in self._q("search", sql, params)]

    def search_prefix(self, prefix: str) -> list[str]:
        """Every URN that starts with ``prefix`` (compared exactly, not as a LIKE pattern)."""
        rows = self._q(
            "search",
            f"SELECT DISTINCT urn FROM {TABLE} WHERE version = 0 "
            "AND substr(urn, 1, ?) = ? ORDER BY urn",
            [len(prefix), prefix],
        )
        return [r[0] for r in rows]

    # -- lineage ----------------------------------------------------------------------------
    def lineage_edges(self, as_of_ms: int | None = None) -> Lineage:
        """Every lineage edge in the graph, as it stood at ``as_of_ms`` (latest when None)."""
        aspects = edge_parse.LINEAGE_ASPECTS
        if as_of_ms is None:
            sql = (
                f"SELECT urn, aspect_name, metadata FROM {TABLE} WHERE version = 0 "
                f"AND aspect_name IN ({marks(aspects)})"
            )
            params: list[Any] = list(aspects)
        else:
            sql = (
                f"SELECT m.urn, m.aspect_name, m.metadata FROM {TABLE} m JOIN ("
                f"SELECT urn, aspect_name, max(version) AS v FROM {TABLE} WHERE version > 0 "
                f"AND createdon <= ? AND aspect_name IN ({marks(aspects)}) "
                "GROUP BY urn, aspect_name) x ON m.urn = x.urn AND m.aspect_name = x.aspect_name "
                "AND m.version = x.v"
            )
            params = [as_of_ms, *aspects]
        # Parsed as the cursor yields each row: fetching them all first held every lineage
        # aspect's text at once (half a gigabyte at a million datasets).
        with self._cursor("lineage", sql, params) as cursor:
            edges = edge_parse.edges_from_rows((u, a, orjson.loads(m)) for u, a, m in cursor)
        return Answer(tuple(edges))

    def lineage(
        self,
        urns: Sequence[str],
        direction: str,
        as_of_ms: int | None = None,
    ) -> Lineage:
        """One hop of lineage from ``urns``: ``direction`` is 'upstream' or 'downstream'."""
        if direction not in ("upstream", "downstream"):
            raise ValueError(f"direction must be 'upstream' or 'downstream', not {direction!r}")
        wanted = set(urns)
        side = "downstream" if direction == "upstream" else "upstream"
        return Answer(tuple(e for e in self.lineage_edges(as_of_ms) if getattr(e, side) in wanted))

    # -- timeline ---------------------------------------------------------------------------
    def timeline(
        self,
        urn: str,
        categories: Sequence[str] = timeline.ALL_CATEGORIES,
        start_ms: int | None = None,
        end_ms: int | None = None,
    ) -> list[Transaction]:
        history = self.histories(urn, timeline.aspects_for(categories))
        return timeline.derive(urn, history, categories, start_ms, end_ms)

    # -- assertions -------------------------------------------------------------------------
    def assertion_runs(
        self,
        asserted_urns: Sequence[str] | None = None,
        since_ms: int | None = None,
        latest_only: bool = True,
    ) -> list[AssertionRun]:
        """Assertion run events ordered by their own timestamp, not by the order written.

        Lite keeps the last *written* event as version 0; every event is also a history row, so
        ordering by ``timestampMillis`` over all versions gives DataHub's true latest.
        """
        sql = (
            f"SELECT metadata, version FROM {TABLE} "
            "WHERE aspect_name = 'assertionRunEvent' AND version > 0"
        )
        params: list[Any] = []
        if asserted_urns is not None:
            if not asserted_urns:
                return []
            sql += f" AND json_extract(metadata, '$.asserteeUrn') IN ({marks(asserted_urns)})"
            params.extend(asserted_urns)
        if since_ms is not None:
            sql += " AND json_extract(metadata, '$.timestampMillis') > ?"
            params.append(since_ms)
        received: list[tuple[int, AssertionRun]] = []
        for metadata, version in self._q("assertions", sql, params):
            event = orjson.loads(metadata)
            run = AssertionRun(
                assertion_urn=event["assertionUrn"],
                asserted_urn=event.get("asserteeUrn", ""),
                timestamp_ms=int(event["timestampMillis"]),
                result=str((event.get("result") or {}).get("type", "ERROR")),
                run_id=str(event.get("runId", "")),
                native=tuple(
                    sorted(
                        (str(k), str(v))
                        for k, v in ((event.get("result") or {}).get("nativeResults") or {}).items()
                    )
                ),
            )
            received.append((int(version), run))
        # By the event's own time, then in the order DataHub received them (each event of one
        # assertion is a new version): two runs sharing a time stamp give the same answer on
        # every read, never one picked by a run id.
        received.sort(key=lambda vr: (vr[1].timestamp_ms, vr[1].assertion_urn, vr[0]))
        runs = [r for _, r in received]
        if not latest_only:
            return list(dict.fromkeys(runs))
        latest: dict[str, AssertionRun] = {}
        for run in runs:
            latest[run.assertion_urn] = run
        return sorted(latest.values(), key=lambda r: (r.timestamp_ms, r.assertion_urn))

    # -- writes -----------------------------------------------------------------------------
    def apply_change(self, urn: str, change: Change) -> Receipt:
        """Lite takes no patches: the change is merged into the current value and written."""
        _sdk.prepare(self._sdk_home)  # the first write imports the SDK, under this sdk_home
        writer = WRITERS[change.kind]
        merged = writer.merge(current(self, urn, writer.aspect), change.values)
        return self.write_aspect(urn, writer.aspect, merged)

    def write_aspect(self, urn: str, aspect: str, value: Json) -> Receipt:
        _sdk.prepare(self._sdk_home)
        try:
            mcp = build_mcp(urn, aspect, value)
        except (KeyError, ValueError, TypeError, AttributeError) as exc:
            return Receipt(urn, aspect, False, f"not a valid {aspect} aspect: {exc}")
        with self._lock:
            self.counter.add("write")
            if not self._rebuild:  # once one write asks for the rebuild, no need to look again
                self._rebuild = aspect in BROWSE_ASPECTS or not self._q("aspects", SEEN, [urn])
            self._lite().write(mcp)
        return Receipt(urn, aspect, True, "written to DataHub Lite")

    def delete_aspect(self, urn: str, aspect: str) -> Receipt:
        """Lite has no delete; remove every version so the aspect reads as absent again. When
        what is left of the entity is only time series (an assertion's run events once its
        definition is gone), it was never more than what was deleted: the series and the
        entity's browse edges go too, so an undo leaves no row behind in any Lite table."""
        with self._lock:
            self.counter.add("write")
            cur = self._con.execute(
                f"DELETE FROM {TABLE} WHERE urn = ? AND aspect_name = ?", [urn, aspect]
            )
            deleted = cur.rowcount
            left = {
                r[0]
                for r in self._con.execute(
                    f"SELECT DISTINCT aspect_name FROM {TABLE} WHERE urn = ?", [urn]
                )
            }
            _sdk.prepare(self._sdk_home)
            if deleted and left <= _sdk.timeseries_aspects():
                self._con.execute(f"DELETE FROM {TABLE} WHERE urn = ?", [urn])
                if self._has_table(EDGES):
                    self._con.execute(
                        f"DELETE FROM {EDGES} WHERE src_id = ? OR dst_id = ?", [urn, urn]
                    )
            self._con.commit()
        said = "deleted" if deleted else "aspect was already absent"
        return Receipt(urn, aspect, deleted > 0, said)

    def _has_table(self, name: str) -> bool:
        found = self._con.execute(
            "SELECT count(*) FROM sqlite_master WHERE type='table' AND name=?", [name]
        ).fetchone()
        return bool(found and found[0])
