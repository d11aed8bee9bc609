"""Forensics at the check's grain: queries that test a hypothesis where the failing check looks.

A table-level threshold hides a small, decisive change: three missing rows of a rate table, one
percent of a feed arriving twice. The check itself is precise, so the forensics are too:

- a ``unique`` test: the keys that repeat in the checked relation, and how many of those same
  keys repeat in the candidate upstream (the duplicates are its);
- a NULL check (``not_null``, a NULL-share monitor) or a ``relationships`` test: the rows that
  lost their match, an anti-join of the model's other input against the candidate on the join
  condition the model's compiled SQL holds (read with sqlglot);

A query that ties the candidate to the failing rows is cited as forensic evidence at the grain
(``grain`` in its detail); one that does not stays in the ledger as a result that did not. Every
query goes through the probe's guard. Pure: the probe answers.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import replace

from upstream_dagster.reliability.evidence import Hypothesis
from upstream_dagster.reliability.walk import ROWS, Investigation, Probe, reachable
from upstream_dagster.spec.urns import relation_of

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

Edges = tuple[tuple[tuple[str, str], tuple[str, str]], ...]
NULL_KINDS = ("not_null", "null_rate_jump")
# causes whose rows (or whose key values) can leave another table's rows without a match
LOSES_MATCH = ("volume_drop", "stale", "value_change", "value_shift", "null_jump", "lost_match")


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _rel(relation: str) -> str:
    return ".".join(_q(p) for p in relation.split("."))


def feeding(edges: Edges, target: tuple[str, str], at: str) -> list[str]:
    """The columns of ``at`` that ``target`` takes its values from (column lineage only)."""
    ups: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for up, down in edges:
        if down[1] != ROWS:
            ups.setdefault((down[0], down[1].lower()), set()).add((up[0], up[1]))
    seen, stack, out = set(), [(target[0], target[1].lower())], []
    while stack:
        for up in sorted(ups.get(stack.pop(), set())):
            key = (up[0], up[1].lower())
            if key not in seen:
                seen.add(key)
                stack.append(key)
                if up[0] == at:
                    out.append(up[1])
    return out


def _cite(inv: Investigation, hyp: Hypothesis, claim: str, sql: str) -> Hypothesis:
    i = inv.ledger.add("forensic", hyp.cause, claim, column=hyp.column, statement=sql, grain=1)
    return replace(hyp, cites=tuple(sorted({*hyp.cites, i})))


def _ask(inv: Investigation, probe: Probe, hyp: Hypothesis, sql: str, relations: set[str],
         budget: int) -> list[tuple[object, ...]] | None:  # fmt: skip
    if inv.forensic_queries >= budget:
        return None
    inv.forensic_queries += 1
    ran, rows, problem = probe.forensic(sql, relations)
    if ran is None:
        inv.ledger.add("refused_query", hyp.cause, f"query refused: {problem}", statement=sql)
        return None
    if problem:
        inv.ledger.add("query_error", hyp.cause, problem, statement=ran)
        return None
    return [tuple(r) for r in rows]


def _dups(relation: str, column: str) -> str:
    return f"SELECT {_q(column)} AS k FROM {_rel(relation)} GROUP BY 1 HAVING count(*) > 1"


def duplicates(inv: Investigation, probe: Probe, hyp: Hypothesis, edges: Edges,
               budget: int) -> Hypothesis:  # fmt: skip
    """A unique test failed: do the keys that repeat in the checked relation repeat in the
    candidate too?"""
    symptom, key = inv.trigger.symptom, inv.trigger.check.column or ""
    if hyp.cause == symptom or hyp.failure_class not in ("volume_jump", "duplicates"):
        return hyp
    cols = feeding(edges, (symptom, key), hyp.cause)
    if not cols:
        return hyp
    mine, theirs = probe.relation(symptom), probe.relation(hyp.cause)
    sql = (
        f"SELECT count(*) FROM ({_dups(mine, key)}) AS s "
        f"JOIN ({_dups(theirs, cols[0])}) AS u ON s.k = u.k"
    )
    rows = _ask(inv, probe, hyp, sql, {mine, theirs}, budget)
    if not rows or not rows[0] or not int(str(rows[0][0] or 0)):
        if rows is not None:
            inv.ledger.add("query_result", hyp.cause, f"no key that repeats in {mine}.{key} "
                           f"repeats in {theirs}.{cols[0]}", statement=sql)  # fmt: skip
        return hyp
    n = int(str(rows[0][0]))
    return _cite(
        inv,
        hyp,
        f"{n} key(s) that repeat in {mine}.{key} repeat in {theirs}.{cols[0]} too: the "
        "duplicates come from there",
        sql,
    )


def join_keys(compiled: str, relation: str) -> tuple[str, list[tuple[str, str]]] | None:
    """In a model's compiled SQL, the relation joined with ``relation`` and the equalities that
    join them: (other relation, [(relation's column, other's column)]). None when the SQL is not
    a plain join of two tables (a CTE on either side, say)."""
    logging.getLogger("sqlglot").setLevel(logging.ERROR)
    try:
        tree = sqlglot.parse_one(compiled, read="duckdb")
    except (SqlglotError, ValueError):
        return None
    for select in tree.find_all(exp.Select):
        tables = {
            t.alias_or_name: t for t in select.find_all(exp.Table) if t.parent_select is select
        }
        named = {a: ".".join(p for p in (t.db, t.name) if p).lower() for a, t in tables.items()}
        mine = [a for a, r in named.items() if r == relation]
        if not mine or len(named) < 2:
            continue
        for join in select.args.get("joins") or []:
            pairs = _pairs(join, mine[0], named)
            if pairs:
                return pairs
    return None


def _pairs(
    join: exp.Join, me: str, named: dict[str, str]
) -> tuple[str, list[tuple[str, str]]] | None:
    others = [a for a in named if a != me]
    using = [u.name for u in join.args.get("using") or [] if getattr(u, "name", "")]
    if using:
        alias = join.this.alias_or_name
        other = alias if alias != me else others[0]
        return named[other], [(u, u) for u in using]
    on = join.args.get("on")
    if on is None:
        return None
    found: list[tuple[str, str]] = []
    other = ""
    for eq in on.find_all(exp.EQ):
        a, b = eq.this, eq.expression
        if not (isinstance(a, exp.Column) and isinstance(b, exp.Column)):
            continue
        if b.table == me:
            a, b = b, a
        if a.table == me and b.table in named and b.table != me:
            other = other or b.table
            if b.table == other:
                found.append((a.name, b.name))
    return (named[other], found) if found else None


def lost_match(inv: Investigation, probe: Probe, hyp: Hypothesis, budget: int) -> Hypothesis:
    """A NULL or relationships failure: rows of the model's other input that find no match in
    the candidate on the model's own join condition."""
    if hyp.failure_class not in LOSES_MATCH or len(hyp.path) < 2:
        return hyp
    model = inv.views.get(hyp.path[1])
    if model is None or not model.compiled:
        return hyp
    theirs = probe.relation(hyp.cause)
    found = join_keys(model.compiled, theirs)
    if found is None:
        return hyp
    other, pairs = found
    on = " AND ".join(f"u.{_q(a)} = o.{_q(b)}" for a, b in pairs)
    keys = ", ".join(f"o.{_q(b)}" for _, b in pairs)
    sql = (
        f"SELECT {keys}, count(*) AS n FROM {_rel(other)} AS o WHERE NOT EXISTS "
        f"(SELECT 1 FROM {_rel(theirs)} AS u WHERE {on}) GROUP BY ALL ORDER BY n DESC, {keys}"
    )
    rows = _ask(inv, probe, hyp, sql, {other, theirs}, budget)
    if not rows:
        if rows is not None:
            inv.ledger.add("query_result", hyp.cause, f"every row of {other} finds its match in "
                           f"{theirs}", statement=sql)  # fmt: skip
        return hyp
    total = sum(int(str(r[-1])) for r in rows)
    sample = "; ".join(", ".join(map(str, r[:-1])) + f" ({r[-1]})" for r in rows[:3])
    via = ", ".join(f"{a} = {b}" for a, b in pairs)
    return _cite(
        inv,
        hyp,
        f"{total} row(s) of {other} find no match in {theirs} on {via}, which "
        f"{relation_of(model.urn)} joins them on: {sample}",
        sql,
    )


def orphans(inv: Investigation, probe: Probe, hyp: Hypothesis, budget: int) -> Hypothesis:
    """A relationships test failed: the checked rows whose key has no parent, cited for a cause
    on the parent's branch that lost rows."""
    t = inv.trigger
    if not t.input_columns or not t.check.column or hyp.failure_class not in LOSES_MATCH:
        return hyp
    parent, key = t.input_columns[0]
    if hyp.cause != parent and hyp.cause not in reachable(parent, inv.upstream):
        return hyp
    child, col, mother = probe.relation(t.symptom), t.check.column, probe.relation(parent)
    sql = (
        f"SELECT count(*) FROM {_rel(child)} AS c WHERE c.{_q(col)} IS NOT NULL AND NOT EXISTS "
        f"(SELECT 1 FROM {_rel(mother)} AS p WHERE p.{_q(key)} = c.{_q(col)})"
    )
    rows = _ask(inv, probe, hyp, sql, {child, mother}, budget)
    if not rows or not int(str(rows[0][0] or 0)):
        return hyp
    return _cite(
        inv,
        hyp,
        f"{rows[0][0]} row(s) of {child} lost their parent in {mother}.{key}, on "
        f"the branch {relation_of(hyp.cause)} feeds",
        sql,
    )


def at_grain(inv: Investigation, probe: Probe, hyps: list[Hypothesis], edges: Edges,
             budget: int) -> list[Hypothesis]:  # fmt: skip
    """Each hypothesis tested where the failing check looks, where its kind allows."""
    kind = inv.trigger.check.kind
    out = []
    for h in hyps:
        if kind == "unique":
            h = duplicates(inv, probe, h, edges, budget)
        elif kind in NULL_KINDS:
            h = lost_match(inv, probe, h, budget)
        elif kind == "relationships":
            h = orphans(inv, probe, lost_match(inv, probe, h, budget), budget)
        out.append(h)
    return out
