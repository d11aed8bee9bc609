"""What a model's SQL does, read with sqlglot: each output column's expression, the filters,
the joins and their keys, the grain of an aggregation, a keep-the-latest-row idiom.

Column lineage, as DataHub holds it, says which upstream column feeds which; it does not say
whether the value was carried as it is or computed (``amount / 100``). A description that
inherits an upstream column's text must know the difference, and one that explains a model
must say what it computes. SQL that sqlglot cannot parse gives no facts, never a guess.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from functools import cache
from typing import Literal

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import sqlglot
    from sqlglot import exp
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.errors import SqlglotError
    from sqlglot.generator import Generator
    from sqlglot.lineage import Node, lineage

MAX_SQL = 100_000  # characters: a model's SQL longer than this is not read (a bound, not a guess)
MAX_SHOWN = 140  # characters of an expression shown to a person
Kind = Literal["carried", "computed", "aggregated"]
DIALECTS = {"snowflake", "bigquery", "postgres", "redshift", "duckdb", "databricks", "spark"}


@dataclass(frozen=True)
class ColumnSql:
    name: str  # the output column, as the SQL names it
    kind: Kind  # carried: a column as it is (renamed or cast); else computed or aggregated
    source: str  # carried: the upstream column it is; else ""
    expression: str  # what computes it, in SQL (qualifiers and casts dropped)


@dataclass(frozen=True)
class SqlFacts:
    columns: tuple[ColumnSql, ...]
    filters: tuple[str, ...] = ()  # the WHERE conditions of the outer query
    joins: tuple[tuple[str, str], ...] = ()  # (joined relation, its key or condition)
    grain: tuple[str, ...] = ()  # GROUP BY of the outer query: one row per ...
    latest: str = ""  # "per k, by t": QUALIFY ROW_NUMBER() ... = 1 keeps one row per key
    distinct: bool = False

    def column(self, name: str) -> ColumnSql | None:
        """The output column ``name``; under ``SELECT *``, every column carried as it is."""
        wanted = name.lower()
        found = next((c for c in self.columns if c.name.lower() == wanted), None)
        if found is None and any(c.name == "*" and c.kind == "carried" for c in self.columns):
            return ColumnSql(name, "carried", name, "")
        return found

    @property
    def reshapes(self) -> bool:
        """Rows differ from the one upstream's: filtered, joined, aggregated or deduplicated."""
        return bool(self.filters or self.joins or self.grain or self.latest or self.distinct)


def dialect_for(platform: str, adapter: str = "") -> str | None:
    """The sqlglot dialect of SQL DataHub holds for a platform (dbt: its adapter's)."""
    name = (adapter or platform).lower()
    return name if name in DIALECTS else None


def _bare(node: exp.Expr) -> exp.Expr:
    """An expression without its alias, casts and parentheses."""
    while isinstance(node, (exp.Alias, exp.Cast, exp.TryCast, exp.Paren)):
        node = node.this
    return node


# Dialects that fold unquoted identifiers to upper case; DataHub and people write them lower.
UPPER_FOLDING = {"snowflake"}


@cache
def _generator(dialect: str | None) -> Generator:
    """One SQL generator per dialect: making one parses SQL of its own (four statements for
    DuckDB), which was half of what reading a project's SQL cost when every shown expression
    made its own."""
    return Dialect.get_or_raise(dialect).generator()


def _shown(node: exp.Expr, dialect: str | None) -> str:
    """An expression as a person reads it: no table qualifiers, no casts, ``x IS NOT NULL``."""
    lower = dialect in UPPER_FOLDING

    def simplify(n: exp.Expr) -> exp.Expr:
        if isinstance(n, exp.Column):
            return exp.column(n.name.lower() if lower else n.name)
        if isinstance(n, (exp.Cast, exp.TryCast)):
            inner: exp.Expr = n.this
            return inner.transform(simplify)
        return n

    def not_null(n: exp.Expr) -> exp.Expr:
        if isinstance(n, exp.Not) and isinstance(n.this, exp.Is):
            return exp.Is(this=n.this.this, expression=exp.Not(this=n.this.expression))
        return n

    shown = _bare(node).copy().transform(simplify).transform(not_null)
    text = _generator(dialect).generate(shown, copy=False)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 3] + "..."


def _expanded(node: Node, depth: int = 0) -> exp.Expr:
    """The column's expression with references to computed columns of CTEs and subqueries
    replaced by what computes them, so ``COALESCE(items.gross, 0)`` reads as the sum it is."""
    root = _bare(node.expression).copy()
    if depth >= 3:
        return root
    for down in node.downstream:
        if not isinstance(down.expression, exp.Alias):
            continue  # a table: the reference is a source column
        inner = _expanded(down, depth + 1)
        table, _, name = down.name.rpartition(".")
        for col in list(root.find_all(exp.Column)):
            if col.name == name and (col.table or "") == table:
                if col is root:
                    return inner
                col.replace(exp.paren(inner) if isinstance(inner, exp.Binary) else inner)
    return root


def _kind(node: Node) -> tuple[Kind, str]:
    """Carried (one source column, as it is), aggregated or computed."""
    path, current = [node], node
    while len(current.downstream) == 1 and isinstance(current.expression, exp.Alias):
        current = current.downstream[0]
        path.append(current)
    exprs = [n.expression for n in path if isinstance(n.expression, exp.Alias)]
    if any(
        a.find(exp.AggFunc) and not a.find(exp.Window) for a in exprs
    ):  # an aggregate, not a window function over rows
        return "aggregated", ""
    if all(isinstance(_bare(a), exp.Column) for a in exprs) and not isinstance(
        current.expression, exp.Alias
    ):
        return "carried", current.name.rpartition(".")[2].strip('"`[]')
    return "computed", ""


def _outer(tree: exp.Expr) -> exp.Select | None:
    if isinstance(tree, exp.Create):
        tree = tree.expression
    return tree if isinstance(tree, exp.Select) else None


def _latest(select: exp.Select, dialect: str | None) -> str:
    """``QUALIFY ROW_NUMBER() OVER (PARTITION BY k ORDER BY t DESC) = 1``: "per k, by t"."""
    qualify = select.args.get("qualify")
    if qualify is None:
        return ""
    window = qualify.find(exp.Window)
    if window is None or not isinstance(window.this, exp.RowNumber):
        return f"rows where {_shown(qualify.this, dialect)}"
    keys = ", ".join(_shown(k, dialect) for k in window.args.get("partition_by") or [])
    order = window.args.get("order")
    by = ", ".join(_shown(o.this, dialect) for o in order.expressions) if order else ""
    return f"per {keys}" + (f", by {by}" if by else "")


def _joins(select: exp.Select, dialect: str | None) -> tuple[tuple[str, str], ...]:
    out = []
    for join in select.args.get("joins") or []:
        target = join.this
        name = target.name if isinstance(target, exp.Table) else target.alias_or_name
        using = join.args.get("using") or []
        on = join.args.get("on")
        if using:
            key = ", ".join(u.name for u in using)
        elif isinstance(on, exp.EQ) and on.left.name and on.left.name == on.right.name:
            key = _shown(on.left, dialect)  # a.order_id = b.order_id: the key is order_id
        else:
            key = _shown(on, dialect) if on is not None else ""
        out.append((name, key))
    return tuple(out)


def _grain(select: exp.Select, dialect: str | None) -> tuple[str, ...]:
    """The GROUP BY keys, ordinals (``GROUP BY 1, 2``) read as the columns they number."""
    group = select.args.get("group")
    items, out = select.expressions, []
    for key in group.expressions if group else []:
        if isinstance(key, exp.Literal) and key.is_int and 0 < int(key.this) <= len(items):
            out.append(items[int(key.this) - 1].alias_or_name)
        else:
            out.append(_shown(key, dialect))
    return tuple(out)


def explain(sql: str, dialect: str | None = None) -> SqlFacts | None:
    """The facts of one SELECT (or CREATE ... AS SELECT); None when it is not one, is too
    long, or sqlglot cannot parse or resolve it."""
    if not sql.strip() or len(sql) > MAX_SQL:
        return None
    logging.getLogger("sqlglot").setLevel(logging.ERROR)
    try:
        trees = [t for t in sqlglot.parse(sql, read=dialect) if t is not None]
        select = _outer(trees[0]) if len(trees) == 1 else None
        if select is None:
            return None
        nodes = lineage(None, select, dialect=dialect)
    except (SqlglotError, ValueError, KeyError, IndexError, TypeError, RecursionError):
        return None
    columns = []
    for name, node in nodes.items():
        kind, source = _kind(node)
        expression = "" if kind == "carried" else _shown(_expanded(node), dialect)
        columns.append(ColumnSql(name, kind, source, expression))
    where = select.args.get("where")
    conditions = (
        list(where.this.flatten())
        if where is not None and isinstance(where.this, exp.And)
        else ([where.this] if where is not None else [])
    )
    return SqlFacts(
        columns=tuple(columns),
        filters=tuple(_shown(c, dialect) for c in conditions),
        joins=_joins(select, dialect),
        grain=_grain(select, dialect),
        latest=_latest(select, dialect),
        distinct=bool(select.args.get("distinct")),
    )
