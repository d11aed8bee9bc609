"""The DuckDB warehouse: profiles, monitor measurements, guarded forensics.

Read paths open the file read-only with external access disabled (a read-only DuckDB
connection alone still lets ``read_csv`` read any file). Relations are named ``schema.table``.
`Warehouse` is what the services are handed (the `warehouse` Dagster resource builds one): the
engine behind it is configuration.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb

from upstream_dagster.errors import UpstreamError
from upstream_dagster.reliability.sqlguard import guard
from upstream_dagster.warehouse import bounded
from upstream_dagster.warehouse.names import in_warehouse, renamed_at

NUMERIC = ("DECIMAL", "INTEGER", "BIGINT", "HUGEINT", "DOUBLE", "FLOAT", "SMALLINT", "TINYINT")
TEMPORAL = ("DATE", "TIMESTAMP")
Columns = list[tuple[str, str]]


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def rel(table: str) -> str:
    return ".".join(quote(p) for p in table.split("."))


# How long opening the warehouse waits for a process that holds it (a build writing it) before
# it gives up, and how often it tries again. Dagster steps that use it wait their turn in the
# `warehouse` pool first; this covers what runs outside a step (a fault applied, an assistant's
# question) and anything another tool opens.
WAIT_SECONDS = 900.0
RETRY_SECONDS = 2.0
_waiting: list[Callable[[str], None]] = []


@contextmanager
def waiting(listener: Callable[[str], None]) -> Iterator[None]:
    """``listener(message)`` when an open of the warehouse starts waiting inside the block."""
    _waiting.append(listener)
    try:
        yield
    finally:
        _waiting.remove(listener)


def _held(exc: duckdb.IOException) -> bool:
    return "lock" in str(exc).lower()


def _open(
    path: Path, read_only: bool, config: dict[str, str | bool | int | float | list[str]]
) -> duckdb.DuckDBPyConnection:
    """The connection, once no other process holds the file (waiting at most WAIT_SECONDS)."""
    deadline = time.monotonic() + WAIT_SECONDS
    told = False
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only, config=config)
        except duckdb.IOException as exc:
            if not _held(exc) or time.monotonic() >= deadline:
                raise UpstreamError(
                    f"cannot open the warehouse {path}: {exc}",
                    "another process holds it for writing (a build); run the command again "
                    "when it has finished",
                ) from exc
            if not told:
                for listener in list(_waiting):
                    listener(f"waiting for the warehouse: another process holds it ({exc})")
                told = True
            time.sleep(RETRY_SECONDS)


@contextmanager
def connect(
    path: Path, *, read_only: bool = True, create: bool = False, external: bool = False
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection with external access off (no file, no network) unless ``external``: only
    an estate's own feed script may read files. ``create`` makes a missing warehouse. While
    another process holds the file (a build), it waits its turn rather than failing."""
    if not path.exists() and not create:
        raise UpstreamError(f"the warehouse {path} does not exist", "run `make demo` first")
    config: dict[str, str | bool | int | float | list[str]] = (
        {} if external else {"enable_external_access": False}
    )
    con = _open(path, read_only, config)
    try:
        yield con
    finally:
        con.close()


# What one query from outside the build (a forensic probe, a fault's statement) may take, unless
# estate.yaml's policies.reliability.budgets say otherwise. `bounded` makes them bind.
QUERY_SECONDS = 30.0
QUERY_MEMORY_MB = 1024


def relations(con: duckdb.DuckDBPyConnection) -> dict[str, Columns]:
    rows = con.execute(
        "SELECT lower(table_schema || '.' || table_name), column_name, data_type "
        "FROM information_schema.columns ORDER BY table_schema, table_name, ordinal_position"
    ).fetchall()
    out: dict[str, Columns] = {}
    for table, column, kind in rows:
        out.setdefault(table, []).append((column, kind))
    return out


def views(con: duckdb.DuckDBPyConnection) -> frozenset[str]:
    """Every view, as schema.table (lower case)."""
    rows = con.execute(
        "SELECT table_schema, table_name FROM information_schema.tables WHERE table_type = 'VIEW'"
    ).fetchall()
    return frozenset(f"{schema}.{name}".lower() for schema, name in rows)


def is_numeric(kind: str) -> bool:
    return kind.upper().startswith(NUMERIC)


def date_column(cols: Columns, preferred: str | None = None) -> str | None:
    """The column days are read from: ``preferred`` if present, else the first DATE/TIMESTAMP."""
    names = {c.lower(): c for c, _ in cols}
    if preferred:
        return names.get(preferred.lower())
    return next((c for c, k in cols if k.upper().startswith(TEMPORAL)), None)


def _scalar(value: Any) -> float | None:
    return None if value is None else float(value)


# -- profiles --------------------------------------------------------------------------------
# A text column with at most this many distinct values gets its value frequencies profiled: a
# code, a status, a currency. A value that appears or vanishes there changes no NULL share and
# no mean, and is what a join key or an accepted-values test is sensitive to.
CATEGORICAL = 12


def profile(
    con: duckdb.DuckDBPyConnection,
    table: str,
    cols: Columns,
    at_ms: int,
    day: tuple[str, date] | None = None,
) -> dict[str, Any]:
    """A DataHub ``datasetProfile``: rows, and per column NULLs, distinct values (estimated), mean
    (numbers), min/max (numbers, dates), and the value frequencies of a categorical text column.

    With ``day`` (a date column and a date), the profile of that day's partition only."""
    parts = ["count(*)"]
    for name, kind in cols:
        q = quote(name)
        parts += [f"count({q})", f"approx_count_distinct({q})"]
        if is_numeric(kind):
            parts += [f"avg({q})::DOUBLE", f"min({q})::VARCHAR", f"max({q})::VARCHAR"]
        elif kind.upper().startswith(TEMPORAL):
            parts += ["NULL", f"min({q})::VARCHAR", f"max({q})::VARCHAR"]
        else:
            parts += ["NULL", "NULL", "NULL"]
    where, params = "", []
    if day is not None:
        where, params = f" WHERE CAST({quote(day[0])} AS DATE) = ?", [day[1]]
    row = con.execute(f"SELECT {', '.join(parts)} FROM {rel(table)}{where}", params).fetchone()
    row = row or ()
    rows = int(row[0])
    fields: list[dict[str, Any]] = []
    text: list[tuple[int, str]] = []
    for i, (name, kind) in enumerate(cols):
        present, distinct, mean, low, high = row[1 + 5 * i : 6 + 5 * i]
        field: dict[str, Any] = {
            "fieldPath": name,
            "nullCount": rows - int(present),
            "nullProportion": (rows - int(present)) / rows if rows else 0.0,
            "uniqueCount": int(distinct),
        }
        if mean is not None:
            field["mean"] = f"{mean:.6g}"
        if low is not None:
            field["min"], field["max"] = str(low), str(high)
        textual = not is_numeric(kind) and not kind.upper().startswith(TEMPORAL)
        if textual and 0 < int(distinct) <= CATEGORICAL:
            text.append((len(fields), name))
        fields.append(field)
    if text:
        found = con.execute(
            f"SELECT {', '.join(f'histogram({quote(n)}::VARCHAR)' for _, n in text)} "
            f"FROM {rel(table)}{where}",
            params,
        ).fetchone()
        for (i, _), hist in zip(text, found or (), strict=False):
            fields[i]["distinctValueFrequencies"] = [
                {"value": str(v), "frequency": int(c)} for v, c in sorted((hist or {}).items())
            ]
    out: dict[str, Any] = {
        "timestampMillis": at_ms,
        "rowCount": rows,
        "columnCount": len(cols),
        "fieldProfiles": fields,
    }
    if day is not None:
        out["partitionSpec"] = {"type": "PARTITION", "partition": f"{day[0]}={day[1]}"}
    return out


# -- monitor measurements ---------------------------------------------------------------------
def daily(
    con: duckdb.DuckDBPyConnection, table: str, day_col: str, expr: str, last: date, days: int
) -> dict[date, float]:
    """``expr`` per day over ``days`` days ending at ``last`` (days with no rows are absent)."""
    first = last - timedelta(days=days)
    rows = con.execute(
        f"SELECT CAST({quote(day_col)} AS DATE) AS d, {expr} FROM {rel(table)} "
        f"WHERE CAST({quote(day_col)} AS DATE) BETWEEN ? AND ? GROUP BY d",
        [first, last],
    ).fetchall()
    return {d: float(v or 0) for d, v in rows}


def null_share(con: duckdb.DuckDBPyConnection, table: str, column: str) -> float:
    total, nulls = con.execute(
        f"SELECT count(*), count(*) - count({quote(column)}) FROM {rel(table)}"
    ).fetchone() or (0, 0)
    return float(nulls) / total if total else 0.0


def repeated(con: duckdb.DuckDBPyConnection, table: str, column: str) -> int:
    """How many values of ``column`` appear on more than one row (NULLs aside)."""
    sql = (
        f"SELECT count(*) FROM (SELECT {quote(column)} FROM {rel(table)} "
        f"WHERE {quote(column)} IS NOT NULL GROUP BY 1 HAVING count(*) > 1)"
    )
    row = con.execute(sql).fetchone()
    return int(row[0]) if row else 0


def row_count(con: duckdb.DuckDBPyConnection, table: str) -> int:
    return int((con.execute(f"SELECT count(*) FROM {rel(table)}").fetchone() or (0,))[0])


def newest(con: duckdb.DuckDBPyConnection, table: str, column: str) -> datetime | None:
    """The latest value of a date or time column, as a UTC instant (None when it holds none)."""
    found = con.execute(f"SELECT max({quote(column)})::TIMESTAMP FROM {rel(table)}").fetchone()
    value = found[0] if found else None
    if not isinstance(value, datetime):
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


# -- forensics ----------------------------------------------------------------------------------
def forensic(
    path: Path,
    sql: str,
    allowed: set[str],
    seconds: float | None = None,
    memory_mb: int | None = None,
) -> tuple[str | None, list[tuple[Any, ...]], str]:
    """(statement run or None, rows, refusal or error). Never raises on a bad query. Rows cut
    at `bounded.RESULT_ROWS` or `bounded.RESULT_BYTES` come with the reason they stop."""
    checked = guard(sql, allowed)
    if checked.refused or checked.sql is None:
        return None, [], checked.reason
    if not path.exists():  # an estate DataHub knows but this warehouse does not hold
        return None, [], f"no warehouse at {path}: the query was not run"
    seconds = QUERY_SECONDS if seconds is None else seconds
    memory_mb = QUERY_MEMORY_MB if memory_mb is None else memory_mb
    try:  # in a worker process: the deadline covers the fetch, the memory cap every byte
        result = bounded.run(path, [checked.sql], seconds, memory_mb)
    except bounded.QueryFailed as exc:
        return checked.sql, [], exc.problem
    except UpstreamError as exc:  # a limit: the reason names the setting that raises it
        return checked.sql, [], f"{exc.problem} (fix: {exc.fix})"
    return checked.sql, result.rows, result.cut


@dataclass(frozen=True)
class Warehouse:
    """One warehouse: where it is, the SQL dialect sqlglot reads its queries in, and the
    manifest of the dbt project built in it (which says what DataHub names differently)."""

    path: Path
    dialect: str = "duckdb"
    query_seconds: float | None = None  # None: QUERY_SECONDS
    query_memory_mb: int | None = None  # None: QUERY_MEMORY_MB
    manifest: Path | None = None

    def relation(self, urn: str) -> str:
        """``schema.table`` in this warehouse of the dataset DataHub names ``urn``."""
        return in_warehouse(urn, renamed_at(self.manifest))

    def exists(self) -> bool:
        return self.path.exists()

    def connect(
        self, *, read_only: bool = True
    ) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        return connect(self.path, read_only=read_only)

    def forensic(
        self, sql: str, allowed: set[str]
    ) -> tuple[str | None, list[tuple[Any, ...]], str]:
        return forensic(self.path, sql, allowed, self.query_seconds, self.query_memory_mb)


def load_feeds(warehouse: Path, script: Path, now: datetime) -> dict[str, int]:
    """Run an estate's feed script against ``warehouse``, the clock bound to the SQL variable
    ``upstream_now``; returns the row count of every relation afterwards."""
    if not script.is_file():
        raise UpstreamError(
            f"the feed script {script} does not exist",
            "point UPSTREAM_FEEDS at a .sql file that creates the raw tables, or unset it",
        )
    warehouse.parent.mkdir(parents=True, exist_ok=True)
    stamp = now.astimezone(UTC).replace(tzinfo=None).isoformat(sep=" ")
    with connect(warehouse, read_only=False, create=True, external=True) as con:
        con.execute(f"SET VARIABLE upstream_now = TIMESTAMP '{stamp}'")
        try:
            con.execute(script.read_text())
        except duckdb.Error as exc:
            raise UpstreamError(
                f"the feed script {script} failed: {exc}", "fix the SQL in the script"
            ) from exc
        return {t: row_count(con, t) for t in relations(con)}


def export_csv(con: duckdb.DuckDBPyConnection, table: str, path: Path) -> int:
    """Write a relation to a CSV file with a header row (a dbt seed's format); returns rows.
    Read through this connection and written by Python: the connection keeps external access
    off."""
    import csv

    result = con.execute(f"SELECT * FROM {rel(table)}")
    names = [d[0] for d in result.description]
    rows = result.fetchall()
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(names)
        writer.writerows(["" if v is None else v for v in row] for row in rows)
    return len(rows)
