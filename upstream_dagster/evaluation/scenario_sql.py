"""The SQL a scenario file may hold, parsed and rendered back by sqlglot: a column type, a row
condition, a value. Text from a file is never pasted into a statement: what runs is what sqlglot
rendered from what it parsed, and anything that is not the one thing asked for is refused."""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_READS = (exp.Select, exp.Query, exp.Table)


def sql_type(text: str) -> str:
    """``text`` parsed as a DuckDB column type and rendered back; ValueError when it is not one."""
    try:
        parsed = exp.DataType.build(text, dialect="duckdb")
    except (ParseError, TypeError, ValueError) as exc:
        raise ValueError(
            f"{text!r} is not a column type (write one such as VARCHAR, BIGINT, DECIMAL(12, 2))"
        ) from exc
    return parsed.sql("duckdb")


def _plain(text: str, what: str) -> None:
    if "--" in text or "/*" in text or ";" in text:
        raise ValueError(f"{what} {text!r} holds a comment or a ';': write one plain expression")


def condition(text: str) -> str:
    """``text`` parsed as one SQL condition (a WHERE clause's body) and rendered back by
    sqlglot; ValueError for anything else: a comment that would swallow the rest of the
    statement, a second statement, a write, a subquery reading another table."""
    _plain(text, "where")
    try:
        parsed = sqlglot.parse_one(f"SELECT 1 WHERE {text}", read="duckdb")
    except (ParseError, TokenError) as exc:
        raise ValueError(f"where {text!r} is not a SQL condition") from exc
    where = parsed.args.get("where") if isinstance(parsed, exp.Select) else None
    if where is None or any(isinstance(n, _READS) for n in where.walk()):
        raise ValueError(f"where {text!r} must be one condition over the relation's own columns")
    return str(where.this.sql("duckdb"))


def value(text: str) -> str:
    """``text`` parsed as one SQL value (a literal such as 'EUR' or 42, or an expression over
    the relation's own columns such as upper(currency)) and rendered back by sqlglot."""
    _plain(text, "value")
    try:
        parsed = sqlglot.parse_one(f"SELECT {text}", read="duckdb")
    except (ParseError, TokenError) as exc:
        raise ValueError(f"value {text!r} is not a SQL expression") from exc
    items = parsed.expressions if isinstance(parsed, exp.Select) else []
    extra = [k for k, v in parsed.args.items() if v and k != "expressions"]
    if (
        len(items) != 1
        or extra
        or any(isinstance(n, _READS) for n in items[0].walk())
        or isinstance(items[0], exp.Alias)
    ):
        raise ValueError(
            f"value {text!r} must be one literal or expression over the relation's own columns"
        )
    return str(items[0].sql("duckdb"))


def join_on(text: str) -> tuple[str, str]:
    """``col`` or ``col = other_col``: the faulted relation's column and the other table's."""
    left, _, right = (p.strip() for p in text.partition("="))
    right = right or left
    if not (NAME.match(left) and NAME.match(right)):
        raise ValueError(f"on {text!r} must name a column, or a column = the other table's column")
    return left, right
