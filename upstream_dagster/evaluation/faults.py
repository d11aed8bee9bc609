"""Scenario faults as SQL: each fault kind becomes statements over its relation, applied in one
transaction to the warehouse (a fault that fails leaves it as it was)."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from upstream_dagster.errors import UpstreamError
from upstream_dagster.evaluation.scenario import Fault
from upstream_dagster.reliability.sqlguard import guard
from upstream_dagster.warehouse.duckdb_warehouse import (
    Columns,
    connect,
    date_column,
    quote,
    rel,
    relations,
)


def _rows(fault: Fault, cols: Columns, now: datetime) -> str:
    """The SQL condition selecting the rows a fault touches (all rows when nothing narrows)."""
    conds = []
    if fault.fraction is not None and fault.kind not in ("stale", "skip_model"):
        conds.append(f"(rowid % 100) < {round(fault.fraction * 100)}")
    if fault.days is not None or fault.kind in ("stale", "skip_model"):
        stamp = date_column(list(reversed(cols))) if fault.kind in ("stale", "skip_model") else None
        day_col = stamp or date_column(cols)
        if day_col is None:
            raise UpstreamError(
                f"{fault.kind} on {fault.relation} needs a DATE or TIMESTAMP column",
                "pick a relation with one, or use 'where' to select rows",
            )
        if fault.days is not None:
            since = (now - timedelta(days=fault.days)).date().isoformat()
            conds.append(f"CAST({quote(day_col)} AS DATE) > DATE '{since}'")
        else:
            since_ts = (now - timedelta(hours=fault.hours or 0)).replace(tzinfo=None)
            conds.append(f"{quote(day_col)} > TIMESTAMP '{since_ts.isoformat(sep=' ')}'")
    if fault.where:
        checked = guard(f"SELECT * FROM {fault.table} WHERE {fault.where}", {fault.table})
        if checked.refused:
            raise UpstreamError(
                f"the 'where' of a {fault.kind} fault is refused: {checked.reason}",
                "write a plain SQL condition over the relation's columns",
            )
        conds.append(f"({fault.where})")
    return " AND ".join(conds) or "TRUE"


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
            return [f"ALTER TABLE {table} ALTER COLUMN {col} TYPE {fault.to}"]
        case "null_column":
            return [f"UPDATE {table} SET {col} = NULL WHERE {where}"]
        case "zero_values":
            return [f"UPDATE {table} SET {col} = 0 WHERE {where}"]
        case "scale_values":
            return [f"UPDATE {table} SET {col} = {col} * {float(fault.factor or 1)} WHERE {where}"]
        case "delete_rows" | "stale" | "skip_model":
            return [f"DELETE FROM {table} WHERE {where}"]
        case "duplicate_rows":
            return [f"INSERT INTO {table} SELECT * FROM {table} WHERE {where}"]
    raise ValueError(f"unknown fault {fault.kind}")


def apply_faults(path: Path, faults: list[Fault], now: datetime) -> list[str]:
    """Apply every fault in one transaction: a fault that fails leaves the warehouse as it was."""
    done: list[str] = []
    with connect(path, read_only=False) as con:
        tables = relations(con)
        con.execute("BEGIN")
        try:
            for fault in faults:
                cols = tables.get(fault.table.lower())
                if cols is None:
                    raise UpstreamError(
                        f"the warehouse has no relation {fault.table}",
                        "name a relation as schema.table, e.g. one of: "
                        + ", ".join(sorted(tables)[:8]),
                    )
                for sql in fault_sql(fault, cols, now):
                    con.execute(sql)
                    done.append(sql)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    return done
