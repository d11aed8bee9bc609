"""The columns a model's SQL decides its rows with: named in a WHERE, a JOIN's ON or USING, a
GROUP BY, a HAVING or a QUALIFY, anywhere in the query (its CTEs and subqueries too).

Column lineage, as DataHub holds it, connects projected columns only: a fault in a join key or
a filter column changes which rows a model holds without touching any column lineage edge. The
investigation treats these columns as lineage of the rows: of every column the model has.
Parsed with sqlglot; SQL it cannot parse gives no columns (never a guess).
"""

from __future__ import annotations

import logging
import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

ROW_CLAUSES = (exp.Where, exp.Group, exp.Having, exp.Qualify)


def row_columns(sql: str, dialect: str = "duckdb") -> frozenset[str]:
    """Lower-cased names of the columns that decide which rows ``sql`` returns."""
    logging.getLogger("sqlglot").setLevel(logging.ERROR)
    try:
        statements = sqlglot.parse(sql, read=dialect)
    except (SqlglotError, ValueError):
        return frozenset()
    names: set[str] = set()
    for tree in statements:
        if tree is None:
            continue
        for clause in tree.find_all(*ROW_CLAUSES):
            names |= {c.name.lower() for c in clause.find_all(exp.Column) if c.name}
            if isinstance(clause, exp.Group):
                names |= _ordinals(clause)
        for join in tree.find_all(exp.Join):
            on = join.args.get("on")
            if on is not None:
                names |= {c.name.lower() for c in on.find_all(exp.Column) if c.name}
            for using in join.args.get("using") or []:
                names.add((using.name if hasattr(using, "name") else str(using)).lower())
    return frozenset(n for n in names if n and n != "*")


def _ordinals(group: exp.Group) -> set[str]:
    """The columns behind ``GROUP BY 1, 2``: the select items those positions name."""
    select = group.parent
    if not isinstance(select, exp.Select):
        return set()
    items = select.expressions
    out: set[str] = set()
    for item in group.expressions:
        if isinstance(item, exp.Literal) and item.is_int and 0 < int(item.this) <= len(items):
            target = items[int(item.this) - 1]
            out |= {c.name.lower() for c in target.find_all(exp.Column) if c.name}
    return out
