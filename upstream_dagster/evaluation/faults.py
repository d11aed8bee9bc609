"""Scenario faults as SQL. A fault on a table the build does not write (a raw feed) becomes
statements over that table, applied in one transaction to the warehouse (a fault that fails
leaves it as it was). A fault on a dbt model is a change to the model's code, as it happens in
life: the deployed model's SQL is wrapped so that its output carries the fault, and the build
that follows writes it."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from upstream_dagster.errors import UpstreamError
from upstream_dagster.evaluation.scenario import Fault
from upstream_dagster.evaluation.scenario_sql import condition, join_on
from upstream_dagster.reliability.sqlguard import guard
from upstream_dagster.warehouse import bounded
from upstream_dagster.warehouse import duckdb_warehouse as wh
from upstream_dagster.warehouse.duckdb_warehouse import (
    Columns,
    connect,
    date_column,
    quote,
    rel,
    relations,
    views,
)

_EVENT_TIME = ("late_rows", "out_of_order", "shift_time")  # read the first date column
_LOAD_TIME = ("stale", "skip_model")  # read the last one, usually the load stamp


def _day_column(fault: Fault, cols: Columns) -> str:
    if fault.column and fault.kind in _EVENT_TIME:
        found = date_column(cols, fault.column)
    elif fault.kind in _LOAD_TIME:
        found = date_column(list(reversed(cols)))
    else:
        found = date_column(cols)
    if found is None:
        raise UpstreamError(
            f"{fault.kind} on {fault.relation} needs a DATE or TIMESTAMP column",
            "pick a relation with one, or use 'where' to select rows",
        )
    return found


def _since(now: datetime, hours: float) -> str:
    return f"TIMESTAMP '{(now - timedelta(hours=hours)).replace(tzinfo=None).isoformat(sep=' ')}'"


def _time_conditions(fault: Fault, cols: Columns, now: datetime) -> list[str]:
    conds = []
    if fault.kind in ("stale", "skip_model", "late_rows"):
        conds.append(f"{quote(_day_column(fault, cols))} > {_since(now, fault.hours or 0)}")
    elif fault.kind == "out_of_order":  # one earlier day's rows come after later days'
        day = (now - timedelta(days=fault.days or 1)).date().isoformat()
        conds.append(f"CAST({quote(_day_column(fault, cols))} AS DATE) = DATE '{day}'")
    elif fault.days is not None:
        since = (now - timedelta(days=fault.days)).date().isoformat()
        conds.append(f"CAST({quote(_day_column(fault, cols))} AS DATE) > DATE '{since}'")
    return conds


def _guarded(sql: str, table: str, fault: Fault) -> None:
    checked = guard(sql, {table})
    if checked.refused:
        raise UpstreamError(
            f"the row selection of a {fault.kind} fault is refused: {checked.reason}",
            "write a plain SQL condition over the relation's columns",
        )


def _rows(fault: Fault, cols: Columns, now: datetime, sample: str = "rowid") -> str:
    """The SQL condition selecting the rows a fault touches (all rows when nothing narrows).
    ``sample`` is the number a fraction is taken over: the row id of a table, a hash of the
    row in a model's query."""
    conds = []
    if fault.fraction is not None and fault.kind not in ("stale", "skip_model"):
        conds.append(f"({sample} % 100) < {max(1, round(fault.fraction * 100))}")
    conds += _time_conditions(fault, cols, now)
    if fault.where:
        _guarded(
            f"SELECT * FROM {rel(fault.table)} WHERE {fault.where}", fault.table.lower(), fault
        )
        conds.append(f"({condition(fault.where)})")
    if fault.through is not None:
        t = fault.through
        mine, theirs = join_on(t.on)
        if mine.lower() not in {c.lower() for c, _ in cols}:
            raise UpstreamError(
                f"{fault.relation} has no column {mine!r} to select rows through {t.table}",
                f"pick one of: {', '.join(c for c, _ in cols)}",
            )
        inner = f"SELECT {quote(theirs)} FROM {rel(t.table)} WHERE {condition(t.where)}"
        _guarded(inner, t.table.lower(), fault)
        conds.append(f"{quote(mine)} IN ({inner})")
    return " AND ".join(conds) or "TRUE"


def _shifted(fault: Fault, col: str, kind: str) -> str:
    minutes = round((fault.hours or 0) * 60)
    return f"CAST({col} + to_minutes(CAST({minutes} AS BIGINT)) AS {kind})"


def _type_of(cols: Columns, column: str) -> str:
    return next(t for c, t in cols if c.lower() == column.lower())


def fault_sql(fault: Fault, cols: Columns, now: datetime) -> list[str]:
    """The statements that apply one fault to its relation."""
    names = {c.lower() for c, _ in cols}
    if fault.column and fault.column.lower() not in names:
        raise UpstreamError(
            f"{fault.relation} has no column {fault.column!r}",
            f"pick one of: {', '.join(c for c, _ in cols)}",
        )
    table, col = rel(fault.table), quote(fault.column or "")
    where = _rows(fault, cols, now)
    match fault.kind:
        case "rename_column":
            return [f"ALTER TABLE {table} RENAME COLUMN {col} TO {quote(fault.to or '')}"]
        case "drop_column":
            return [f"ALTER TABLE {table} DROP COLUMN {col}"]
        case "change_type":
            return [f"ALTER TABLE {table} ALTER COLUMN {col} TYPE {fault.sql_type}"]
        case "null_column":
            return [f"UPDATE {table} SET {col} = NULL WHERE {where}"]
        case "zero_values":
            return [f"UPDATE {table} SET {col} = 0 WHERE {where}"]
        case "scale_values":
            return [f"UPDATE {table} SET {col} = {col} * {float(fault.factor or 1)} WHERE {where}"]
        case "set_value":
            return [f"UPDATE {table} SET {col} = {fault.sql_value} WHERE {where}"]
        case "shift_time":
            day = _day_column(fault, cols)
            shifted = _shifted(fault, quote(day), _type_of(cols, day))
            return [f"UPDATE {table} SET {quote(day)} = {shifted} WHERE {where}"]
        case "delete_rows" | "stale" | "skip_model" | "late_rows" | "out_of_order":
            return [f"DELETE FROM {table} WHERE {where}"]
        case "duplicate_rows":
            return [f"INSERT INTO {table} SELECT * FROM {table} WHERE {where}"]
        case "metadata":
            return []  # DataHub only (`breakage`): the warehouse is not touched
    raise ValueError(f"unknown fault {fault.kind}")


FAULT_INPUT = "upstream_fault_input"
FAULT_ROW = "upstream_fault_row"


def model_sql(fault: Fault, cols: Columns, original: str, now: datetime) -> str:
    """The model's SQL changed so that its output carries ``fault`` (a code change)."""
    names = {c.lower() for c, _ in cols}
    if fault.column and fault.column.lower() not in names:
        raise UpstreamError(
            f"{fault.relation} has no column {fault.column!r}",
            f"pick one of: {', '.join(c for c, _ in cols)}",
        )
    if fault.kind in ("skip_model", "metadata"):
        raise ValueError(f"{fault.kind} is not a change to the model's code")
    col = quote(fault.column or "")
    where = _rows(fault, cols, now, sample=f"hash({FAULT_ROW})")
    source = f"{FAULT_INPUT} as {FAULT_ROW}"
    match fault.kind:
        case "rename_column":
            body = f"select * rename ({col} as {quote(fault.to or '')}) from {source}"
        case "drop_column":
            body = f"select * exclude ({col}) from {source}"
        case "change_type":
            body = f"select * replace (cast({col} as {fault.sql_type}) as {col}) from {source}"
        case "null_column":
            body = f"select * replace (case when {where} then null else {col} end as {col}) "
            body += f"from {source}"
        case "zero_values":
            body = f"select * replace (case when {where} then 0 else {col} end as {col}) "
            body += f"from {source}"
        case "scale_values":
            factor = float(fault.factor or 1)
            body = f"select * replace (case when {where} then {col} * {factor} else {col} end "
            body += f"as {col}) from {source}"
        case "set_value":
            kind = _type_of(cols, fault.column or "")
            body = f"select * replace (case when {where} then cast({fault.sql_value} as {kind}) "
            body += f"else {col} end as {col}) from {source}"
        case "shift_time":
            day = _day_column(fault, cols)
            shifted = _shifted(fault, quote(day), _type_of(cols, day))
            body = f"select * replace (case when {where} then {shifted} else {quote(day)} end "
            body += f"as {quote(day)}) from {source}"
        case "delete_rows" | "stale" | "late_rows" | "out_of_order":
            body = f"select * from {source} where not ({where})"
        case "duplicate_rows":
            body = f"select * from {source} union all select * from {source} where {where}"
        case _:
            raise ValueError(f"unknown fault {fault.kind}")
    inner = original.rstrip().rstrip(";").rstrip()
    return f"with {FAULT_INPUT} as (\n{inner}\n)\n{body}\n"


def apply_faults(
    path: Path,
    faults: list[Fault],
    now: datetime,
    seconds: float | None = None,
    memory_mb: int | None = None,
) -> list[str]:
    """Apply every fault in one transaction: a fault that fails leaves the warehouse as it was.
    Each statement runs bounded (`bounded.run`): within ``seconds`` and ``memory_mb``."""
    with connect(path, read_only=True) as con:
        tables = relations(con)
        is_view = views(con)
    planned: list[tuple[Fault, Columns, str]] = []
    for fault in faults:
        cols = tables.get(fault.table.lower())
        if cols is None:
            raise UpstreamError(
                f"the warehouse has no relation {fault.table}",
                "name a relation as schema.table, e.g. one of: " + ", ".join(sorted(tables)[:8]),
            )
        if fault.table.lower() in is_view:
            raise UpstreamError(
                f"{fault.table} is a view: a {fault.kind} fault cannot change its rows "
                "(a view reads its upstream whenever it is queried)",
                "fault the relation it reads, or a model built as a table",
            )
        planned += [(fault, cols, sql) for sql in fault_sql(fault, cols, now)]
    statements = [sql for _, _, sql in planned]
    if not statements:
        return []
    try:
        bounded.run(
            path,
            statements,
            wh.QUERY_SECONDS if seconds is None else seconds,
            wh.QUERY_MEMORY_MB if memory_mb is None else memory_mb,
            write=True,
        )
    except bounded.QueryFailed as exc:
        fault, cols, _ = planned[exc.index]
        raise UpstreamError(
            f"the {fault.kind} fault on {fault.table} could not run: "
            + exc.problem.removeprefix("query failed: "),
            f"check its column and where against {fault.table}'s columns: "
            + ", ".join(c for c, _ in cols[:12]),
        ) from None
    return statements
