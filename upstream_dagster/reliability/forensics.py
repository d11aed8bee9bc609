"""One guarded query per hypothesis, built from a fixed template for its failure class.

The result is read against what the profile or the timeline claimed; a query the guard refuses
stays in the ledger with its statement and reason.
"""

from __future__ import annotations

from typing import Any

from upstream_dagster.reliability.evidence import Hypothesis
from upstream_dagster.reliability.walk import Investigation, Probe


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def template(hyp: Hypothesis, relation: str, moved: bool = False) -> tuple[str, str] | None:
    """(SQL, what a supporting answer looks like), or None when no query can confirm it.
    ``moved``: the shift is of a date or time column's values (its newest moved), not a mean."""
    col = hyp.column
    match hyp.failure_class:
        case "value_shift" if col and moved:
            return (
                f"SELECT count(*) AS row_count, max({_q(col)}) AS newest FROM {relation}",
                f"the newest {col} moved as the profile showed",
            )
        case "rename" if col and hyp.renamed_to:
            return (
                f"SELECT count(*) AS row_count, count({_q(hyp.renamed_to)}) AS filled "
                f"FROM {relation}",
                f"{relation} has a column {hyp.renamed_to} now",
            )
        case "null_jump" if col:
            return (
                f"SELECT count(*) AS row_count, count({_q(col)}) AS filled FROM {relation}",
                f"{col} is NULL in the rows",
            )
        case "value_shift" if col:
            return (
                f"SELECT count(*) AS row_count, avg({_q(col)}) AS mean FROM {relation}",
                f"the mean of {col} is what the profile showed",
            )
        case "volume_drop" | "volume_jump" | "not_rebuilt":
            return (f"SELECT count(*) AS row_count FROM {relation}", "the row count changed")
        case "stale" if col:
            return (
                f"SELECT count(*) AS row_count, max({_q(col)}) AS newest FROM {relation}",
                f"the newest {col} is older than before",
            )
    return None


def _supports(hyp: Hypothesis, rows: list[Any], claim: dict[str, str], moved: bool) -> bool:
    if not rows:
        return False
    row = rows[0]
    total = int(row[0] or 0)
    match hyp.failure_class:
        case "rename":
            return True  # the query names the new column: it ran, so the column is there
        case "null_jump":
            after = float(claim.get("null_after", "1"))
            return total > 0 and abs((total - int(row[1] or 0)) / total - after) < 0.02
        case "value_shift" if moved:  # a time column's newest moved
            return str(row[1])[:10] == claim.get("max_after", "")[:10]
        case "value_shift":
            want = float(claim.get("mean_after", "nan"))
            got = float(row[1]) if row[1] is not None else float("nan")
            return abs(got - want) <= max(1e-6, abs(want) * 0.02)
        case "volume_drop" | "volume_jump":
            return total == int(claim.get("rows_after", "-1"))
        case "not_rebuilt":
            return total > 0
        case "stale":
            return str(row[1]) == claim.get("max_after", "")
    return False


def confirm(inv: Investigation, hyp: Hypothesis, probe: Probe) -> list[int]:
    relation = probe.relation(hyp.cause)
    claim: dict[str, str] = {}
    for i in hyp.cites:
        item = inv.ledger[i]
        if item.subject == hyp.cause and item.kind == "profile":
            claim.update(dict(item.detail))
    moved = hyp.failure_class == "value_shift" and any(
        inv.ledger[i].subject == hyp.cause
        and inv.ledger[i].column == hyp.column
        and "max_after" in dict(inv.ledger[i].detail)
        for i in hyp.cites
    )
    built = template(hyp, relation, moved)
    if built is None:
        return []
    sql, meaning = built
    part = "table" if moved else claim.get("partition", "table")
    if part != "table":  # a one-day finding: query that day only
        column, _, day = part.partition("=")
        if not (column.replace("_", "").isalnum() and len(day) == 10):
            return []
        sql += f" WHERE CAST({_q(column)} AS DATE) = DATE '{day}'"
    ran, rows, problem = probe.forensic(sql, {relation})
    if ran is None:
        return [
            inv.ledger.add("refused_query", hyp.cause, f"query refused: {problem}", statement=sql)
        ]
    if problem:
        return [inv.ledger.add("query_error", hyp.cause, problem, statement=ran)]
    if not _supports(hyp, rows, claim, moved):
        inv.ledger.add(
            "query_result",
            hyp.cause,
            f"the warehouse does not confirm that {meaning}: {rows[:3]}",
            statement=ran,
        )
        return []
    return [
        inv.ledger.add(
            "forensic",
            hyp.cause,
            f"the warehouse confirms that {meaning}: {[tuple(map(str, r)) for r in rows[:3]]}",
            column=hyp.column,
            statement=ran,
        )
    ]
