"""The forensic SQL guard: a query runs only if it is one SELECT over known tables.

Parsed with sqlglot, never matched with regular expressions. Refused: anything but a single
SELECT (DDL, DML, PRAGMA, ATTACH, COPY, INSTALL/LOAD, SET, several statements), table functions
(``read_csv``, ``glob``, ``pragma_*``...), a quoted file name used as a table, any table the
investigation was not told about, and functions that read the host (``getenv``). A LIMIT is
injected or lowered. A refusal carries its reason; the caller keeps it in the evidence ledger.
"""

from __future__ import annotations

import logging
import re
import warnings
from dataclasses import dataclass

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import sqlglot
    from sqlglot import exp

MAX_ROWS = 200
_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_WRITES = (
    exp.Insert,
    exp.Update,
    exp.Delete,
    exp.Merge,
    exp.Create,
    exp.Drop,
    exp.Alter,
    exp.Copy,
    exp.Command,
    exp.Pragma,
    exp.Set,
)
_HOST_FUNCTIONS = {"getenv", "current_setting", "query", "query_table", "sql_auto_complete"}


@dataclass(frozen=True)
class Guarded:
    sql: str | None  # the statement to run, LIMIT injected; None when refused
    reason: str = ""  # why it was refused

    @property
    def refused(self) -> bool:
        return self.sql is None


def _refuse(reason: str) -> Guarded:
    return Guarded(None, reason)


def _table_name(table: exp.Table) -> str | None:
    parts = [table.catalog, table.db, table.name]
    if not isinstance(table.this, exp.Identifier):
        return None
    if not all(_PLAIN.match(p) for p in parts if p):
        return None
    return ".".join(p for p in parts if p).lower()


def guard(sql: str, allowed: set[str], max_rows: int = MAX_ROWS) -> Guarded:
    """Return the statement to run, or why it may not run.

    ``allowed`` holds the relations the query may read, as ``schema.table`` (lower case); a
    reference with a database prefix is matched on its last two parts.
    """
    quiet = logging.getLogger("sqlglot")
    level, quiet.level = quiet.level, logging.ERROR  # it logs what it cannot parse; we refuse it
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            statements = [s for s in sqlglot.parse(sql, read="duckdb") if s is not None]
    except sqlglot.errors.SqlglotError as exc:  # a parse error, an unclosed quote or comment
        first = (str(exc).splitlines() or ["unreadable"])[0]
        return _refuse(f"not parseable as DuckDB SQL: {first}")
    finally:
        quiet.level = level
    if len(statements) != 1:
        return _refuse(f"{len(statements)} statements: only one SELECT may run")
    (tree,) = statements
    if not isinstance(tree, exp.Select | exp.Union):
        return _refuse(f"{type(tree).__name__.upper()} statement refused: only a SELECT may run")
    for node in tree.walk():
        if isinstance(node, _WRITES):  # a write hidden in a CTE or a subquery
            return _refuse(
                f"{type(node).__name__.upper()} inside the SELECT refused: only reads may run"
            )
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    for table in tree.find_all(exp.Table):
        name = _table_name(table)
        if name is None:
            return _refuse(
                f"reads {table.sql(dialect='duckdb')!r}, which is not a plain table "
                "(table functions and file names are refused)"
            )
        short = ".".join(name.split(".")[-2:])
        if name not in ctes and short not in allowed:
            return _refuse(f"reads {name}, which is not a relation under investigation")
    for func in tree.find_all(exp.Func):
        fname = (func.sql_name() if not isinstance(func, exp.Anonymous) else func.name).lower()
        if fname in _HOST_FUNCTIONS or fname.startswith(("read_", "pragma")):
            return _refuse(f"calls {fname}(), which reads outside the warehouse")
    limit = tree.args.get("limit")
    current = None
    if isinstance(limit, exp.Limit) and isinstance(limit.expression, exp.Literal):
        current = int(limit.expression.this) if limit.expression.is_int else None
    if current is None or current > max_rows:
        tree = tree.limit(max_rows, copy=True)
    return Guarded(tree.sql(dialect="duckdb"))
