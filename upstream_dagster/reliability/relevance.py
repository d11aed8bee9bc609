"""Relevance before confidence: a change is a cause of a failing check only if a path carries it
to what the check measures, and the checked data moved.

The path is column lineage to the checked columns (and to the columns a model decides its rows
with, which feed every column of it); a change to whole rows (lost, duplicated, late, a model
left stale) reaches a check on the rows, or a checked column whose lineage passes through the
changed relation. A model whose columns DataHub holds no lineage for is opaque: everything
upstream of it may reach through it, and it is said so. The checked data moved when the
profile of what the check reads (the checked column, or the rows) differs between the last
healthy build and the symptom's, or when the check's own measurement did.

A change that reaches nothing checked, or a failure on data that did not move, is a
coincidence, and the verdict says so instead of concluding on it. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from upstream_dagster.reliability import profiles
from upstream_dagster.reliability.evidence import Hypothesis
from upstream_dagster.reliability.walk import ROWS, Investigation, reachable
from upstream_dagster.spec.urns import relation_of

Edges = tuple[tuple[tuple[str, str], tuple[str, str]], ...]
# Failures of whole rows: they reach whatever reads the relation's rows.
ROW_CLASSES = frozenset(
    {"volume_drop", "volume_jump", "stale", "not_rebuilt", "lost_match", "duplicates"}
)
SCHEMA_CLASSES = frozenset({"rename", "column_removed", "type_change"})


@dataclass(frozen=True)
class Relevance:
    reaches: bool | None  # None: the lineage cannot say
    moved: bool | None  # None: nothing was observed of the checked data
    why: str

    @property
    def coincidence(self) -> bool:
        return self.reaches is False or self.moved is False


@dataclass(frozen=True)
class Reach:
    """What the checked columns' lineage reaches: (relation, column) pairs, and relations
    reached through a model DataHub holds no column lineage for (any column may reach)."""

    columns: frozenset[tuple[str, str]]
    opaque: frozenset[str]
    targets: tuple[tuple[str, str], ...]

    def column(self, urn: str, column: str) -> bool:
        key = (urn, column.lower())
        return key in self.columns or key in self.targets or urn in self.opaque

    def relation(self, urn: str) -> bool:
        return urn in self.opaque or any(n == urn for n, _ in (*self.columns, *self.targets))


def targets(inv: Investigation) -> tuple[tuple[str, str], ...]:
    t = inv.trigger
    own = (t.symptom, (t.check.column or ROWS).lower())
    return (own, *((u, c.lower()) for u, c in t.input_columns))


def reach(inv: Investigation, edges: Edges) -> Reach:
    """Everything the checked columns' lineage reaches, upstream."""
    ups: dict[tuple[str, str], set[tuple[str, str]]] = {}
    fed: set[str] = set()  # relations some column lineage leads into
    for up, down in edges:
        ups.setdefault((down[0], down[1].lower()), set()).add((up[0], up[1].lower()))
        if down[1] != ROWS:
            fed.add(down[0])
    goal = targets(inv)
    seen: set[tuple[str, str]] = set()
    opaque: set[str] = set()
    stack = list(goal)
    visited: set[str] = set()
    while stack:
        node = stack.pop()
        reads = inv.upstream.get(node[0]) or ()
        if node[0] not in visited:
            visited.add(node[0])
            if node[0] not in fed and reads:
                # no column lineage into this model: whatever is upstream may reach through it
                opaque |= reachable(node[0], inv.upstream)
        parents = ups.get(node, set())
        if node[1] != ROWS and reads and not _from_elsewhere(node, parents):
            # a column of a model that reads others, with no lineage into it from any of them:
            # lineage lost its edges (or it counts rows); whatever is upstream may reach it
            opaque |= reachable(node[0], inv.upstream)
        nexts = parents | ups.get((node[0], ROWS), set())
        if node[1] == ROWS:  # a model's rows are made of its inputs' rows
            nexts |= {(u, ROWS) for u in reads}
        for up in nexts:
            if up not in seen:
                seen.add(up)
                stack.append(up)
    return Reach(frozenset(seen), frozenset(opaque), goal)


def _from_elsewhere(node: tuple[str, str], parents: set[tuple[str, str]]) -> bool:
    """Whether lineage feeds ``node`` from another relation (not its own warehouse twin)."""
    return any(relation_of(p[0]) != relation_of(node[0]) for p in parents)


def reaches(inv: Investigation, hyp: Hypothesis, r: Reach | None) -> tuple[bool | None, str]:
    """Whether ``hyp`` can reach what the failing check measures, and the sentence that says
    why (or why not)."""
    check = inv.trigger.check
    what = _measured(inv)
    name = relation_of(hyp.cause) + (f".{hyp.column}" if hyp.column else "")
    if check.kind == "build":
        if hyp.failure_class not in SCHEMA_CLASSES:
            return None, ""
        if _named(inv, hyp):
            return True, f"the build error names {hyp.column}"
        if _any_named(inv):  # another change is what the error names
            return False, f"the build error names another column, not {hyp.column}"
        return None, ""
    if r is None:
        return None, "no column lineage to judge the path by"
    rows_checked = r.targets[0][1] == ROWS
    if hyp.failure_class in ROW_CLASSES or hyp.column is None:
        ok = r.relation(hyp.cause) or rows_checked or hyp.cause == inv.trigger.symptom
        via = "rows" if hyp.failure_class in ROW_CLASSES else "code"
        return ok, (
            f"{relation_of(hyp.cause)}'s {via} feed {what}"
            if ok
            else f"no column of {relation_of(hyp.cause)} feeds {what}, nor decides its rows"
        )
    ok = r.column(hyp.cause, hyp.column)
    return ok, (
        f"{name} feeds {what} (column lineage)"
        if ok
        else f"{name} feeds none of {what}: no column lineage path, and it decides no rows"
    )


def _measured(inv: Investigation) -> str:
    t = inv.trigger
    own = (
        f"{relation_of(t.symptom)}.{t.check.column}"
        if t.check.column
        else f"the rows of {relation_of(t.symptom)}"
    )
    extra = [f"{relation_of(u)}.{c}" for u, c in t.input_columns]
    return " and ".join([own, *extra])


def _named(inv: Investigation, hyp: Hypothesis) -> bool:
    return any(inv.ledger[i].kind == "run_record" and inv.ledger[i].column for i in hyp.cites)


def _any_named(inv: Investigation) -> bool:
    return any(e.kind == "run_record" and e.column for e in inv.ledger.items)


def checked_moved(inv: Investigation) -> tuple[bool | None, str]:
    """Whether the data the failing check reads moved between the last healthy build and the
    symptom's, and the sentence that says so."""
    t = inv.trigger
    if t.check.kind in ("build", "freshness"):
        return None, ""  # a model that failed to build keeps its old table: that is the failure
    found: list[bool] = []
    reads = [(t.symptom, t.check.column), *t.input_columns]
    for urn, column in reads:
        view = inv.views.get(urn)
        if view is None:
            continue
        name = _field(view, column)
        judged = profiles.moved(view, t.window, name)
        if judged is not None:
            found.append(judged)
    measured = _measurements(inv)
    if measured is not None:
        found.append(measured)
    what = _measured(inv)
    if any(found):
        return True, f"{what} changed between the last healthy build and this one"
    if found:
        return False, (
            f"{what} did not change between the last passing run and this failure: the "
            "check failed on the same data it passed on"
        )
    return None, ""


def _field(view: object, column: str | None) -> str | None:
    if column is None:
        return None
    for p in getattr(view, "profiles", ()):
        for name, _ in p.columns:
            if name.lower() == column.lower():
                return str(name)
    return column


def _measurements(inv: Investigation) -> bool | None:
    """The check's own measurement at its failure against its last passing one, where the
    check says what it measured both times."""
    view = inv.views.get(inv.trigger.symptom)
    if view is None:
        return None
    mine = [r for r in view.runs if r.assertion == inv.trigger.check.assertion]
    failed = [r for r in mine if not r.passed and inv.trigger.window.holds(r.at_ms)]
    passed = [r for r in mine if r.passed and r.at_ms <= inv.trigger.window.last_good_ms]
    if not failed or not passed or not failed[-1].observed or not passed[-1].observed:
        return None
    return failed[-1].observed != passed[-1].observed


def history(inv: Investigation) -> str:
    """The failing check's run history, in a sentence: how often it passed and failed, and
    what it reported when it failed."""
    view = inv.views.get(inv.trigger.symptom)
    mine = [r for r in (view.runs if view else ()) if r.assertion == inv.trigger.check.assertion]
    if not mine:
        return "no earlier run of the check is recorded"
    fails = [r for r in mine if not r.passed]
    flips = sum(1 for a, b in zip(mine, mine[1:], strict=False) if a.passed != b.passed)
    said = f" (it said {fails[-1].message!r})" if fails and fails[-1].message else ""
    return (
        f"{len(mine)} recorded run(s): {len(mine) - len(fails)} passed, {len(fails)} failed, "
        f"{flips} flip(s) between pass and fail{said}"
    )


def judge(inv: Investigation, hyp: Hypothesis, r: Reach | None) -> Relevance:
    ok, why = reaches(inv, hyp, r)
    moved, said = checked_moved(inv)
    return Relevance(ok, moved, "; ".join(x for x in (why, said) if x))
