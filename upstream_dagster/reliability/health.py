"""Is one node healthy? Pure judgements over what DataHub recorded about it.

A node is unhealthy when, inside the incident's window (after the last time the symptom's check
passed, and not after the symptom), one of these shows: a failing assertion, a schema change
(a REMOVE and an ADD of the same type in one transaction are a rename), a change to a model's
own code, a jump in a column's NULL share, a shift in a column's mean, a value that appeared or
vanished, a change in its row count, its newest timestamp moving backwards, or a build that
skipped it while its upstreams were rebuilt. Smaller profile changes are kept as minor findings
(`profiles`): they make no node unhealthy by themselves.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from upstream_dagster.reliability import profiles
from upstream_dagster.reliability.evidence import Finding, Ledger
from upstream_dagster.reliability.health_types import (
    GRACE_MS,
    CheckRun,
    ColumnProfile,
    FailingCheck,
    NodeView,
    Profile,
    SchemaEvent,
    Window,
)
from upstream_dagster.reliability.profiles import DAY_ROW_CHANGE, MEAN_SHIFT, NULL_JUMP, ROW_CHANGE

__all__ = [
    "DAY_ROW_CHANGE",
    "GRACE_MS",
    "MEAN_SHIFT",
    "NULL_JUMP",
    "ROW_CHANGE",
    "CheckRun",
    "ColumnProfile",
    "FailingCheck",
    "NodeView",
    "Profile",
    "SchemaEvent",
    "Window",
    "code_change",
    "correlate",
    "diagnose",
    "not_rebuilt",
    "observed",
    "outcome",
    "widened",
]


NOT_EVALUABLE = "not evaluable"  # how a monitor's ERROR message begins when it could not look


def outcome(message: str) -> str:
    """How a failing run reads: a check that could not look (no data in its window, a relation
    that no longer answers) did not fail, and the analysis must not say it did."""
    return "could not evaluate" if message.startswith(NOT_EVALUABLE) else "failed"


@dataclass(frozen=True)
class SchemaChange:
    at_ms: int
    kind: str  # rename | column_removed | column_added | type_change | type_widened
    column: str
    new_column: str | None = None
    native_type: str = ""


_INTEGERS = {"TINYINT": 1, "SMALLINT": 2, "INTEGER": 3, "INT": 3, "BIGINT": 4, "HUGEINT": 5}
_DECIMAL = re.compile(r"^(?:DECIMAL|NUMERIC)\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
_VARCHAR = re.compile(r"^(?:VARCHAR|TEXT|STRING)(?:\s*\(\s*(\d+)\s*\))?$")


def widened(old: str, new: str) -> bool:
    """Whether a column's type change keeps every value as it was: a wider integer, FLOAT to
    DOUBLE, a DECIMAL with room for as many digits either side of the point, a longer VARCHAR.
    False when the old type is not known."""
    o, n = " ".join(old.upper().split()), " ".join(new.upper().split())
    if not o or o == n:
        return False
    if o in _INTEGERS and n in _INTEGERS:
        return _INTEGERS[n] > _INTEGERS[o]
    if o in ("FLOAT", "REAL", "FLOAT4") and n in ("DOUBLE", "FLOAT8"):
        return True
    a, b = _DECIMAL.match(o), _DECIMAL.match(n)
    if a and b:
        (p1, s1), (p2, s2) = (int(x) for x in a.groups()), (int(x) for x in b.groups())
        return s2 >= s1 and p2 - s2 >= p1 - s1
    a, b = _VARCHAR.match(o), _VARCHAR.match(n)
    if a and b:
        return b.group(1) is None or (a.group(1) is not None and int(b.group(1)) >= int(a.group(1)))
    return False


def correlate(events: tuple[SchemaEvent, ...]) -> list[SchemaChange]:
    """Pair a REMOVE and an ADD of the same type in one transaction into a rename."""
    out: list[SchemaChange] = []
    for at in sorted({e.at_ms for e in events}):
        batch = [e for e in events if e.at_ms == at]
        adds = [e for e in batch if e.operation == "ADD"]
        for e in batch:
            if e.operation == "MODIFY" and e.old_column:
                out.append(SchemaChange(at, "rename", e.old_column, e.column, e.native_type))
            elif e.operation == "MODIFY" and widened(e.old_type, e.native_type):
                # every value fits the new type unchanged: no consumer can tell
                out.append(SchemaChange(at, "type_widened", e.column, None, e.native_type))
            elif e.operation == "MODIFY":
                out.append(SchemaChange(at, "type_change", e.column, None, e.native_type))
            elif e.operation == "REMOVE":
                twin = next((a for a in adds if a.native_type == e.native_type), None)
                if twin is not None:
                    adds.remove(twin)
                    out.append(SchemaChange(at, "rename", e.column, twin.column, e.native_type))
                else:
                    out.append(SchemaChange(at, "column_removed", e.column, None, e.native_type))
        out.extend(SchemaChange(at, "column_added", a.column, None, a.native_type) for a in adds)
    return out


def observed(node: NodeView, w: Window) -> bool:
    """Whether anything could be seen of ``node`` in the window: a profile to compare with the
    last healthy build's, a failing check, or a schema change. A node nothing was observed on is
    unknown, not healthy: it neither clears nor contradicts what passes through it."""
    changed = any(w.holds(e.at_ms) for e in node.schema)
    return bool(node.failing) or changed or profiles.pair(node.profiles, w, "") is not None


def _normal(sql: str) -> str:
    return " ".join(sql.split())


def code_change(node: NodeView, w: Window, ledger: Ledger) -> list[Finding]:
    """A model whose own code (as written, before compilation) changed inside the window: the
    version the last healthy build ran against the one the symptom's build ran."""
    before = [sql for at, sql in node.code if at <= w.last_good_ms]
    during = [(at, sql) for at, sql in node.code if w.holds(at)]
    if not before or not during or _normal(before[-1]) == _normal(during[-1][1]):
        return []
    at, now = during[-1]
    old_lines = {_normal(x) for x in before[-1].splitlines()}
    new_lines = [x.strip() for x in now.splitlines() if x.strip() and _normal(x) not in old_lines]
    i = ledger.add(
        "timeline",
        node.urn,
        f"the code of {node.name} changed (DataHub's view logic history)"
        + (f": now reads {new_lines[0][:120]!r}" if new_lines else ""),
        at_ms=at,
        added=" | ".join(new_lines[:4])[:400],
    )
    return [Finding("code_change", node.urn, None, i, at)]


def diagnose(
    node: NodeView, w: Window, ledger: Ledger, upstream_runs: tuple[int, ...] = ()
) -> list[Finding]:
    """Every finding on one node inside the window, each recorded in the ledger."""
    out: list[Finding] = []
    for check in node.failing:
        i = ledger.add(
            "assertion",
            node.urn,
            f"{check.description or check.assertion} {outcome(check.message)} on {node.name}"
            + (f": {check.message}" if check.message else ""),
            column=check.column,
            at_ms=check.at_ms,
            assertion=check.assertion,
            message=check.message,
            check=check.description,
        )
        kind = "stale" if check.freshness else "failing_check"
        out.append(Finding(kind, node.urn, check.column, i, check.at_ms))
    for change in correlate(node.schema):
        if change.kind in ("column_added", "type_widened") or not w.holds(change.at_ms):
            continue
        text = {
            "rename": f"column {change.column} was renamed to {change.new_column}",
            "column_removed": f"column {change.column} was removed",
            "type_change": f"the type of column {change.column} changed to {change.native_type}",
        }[change.kind]
        i = ledger.add(
            "timeline",
            node.urn,
            f"{node.name}: {text} (DataHub timeline, TECHNICAL_SCHEMA)",
            column=change.column,
            at_ms=change.at_ms,
            new_column=change.new_column or "",
        )
        out.append(
            Finding(change.kind, node.urn, change.column, i, change.at_ms, change.new_column)
        )
    out += profiles.findings(node, w, ledger)
    out += code_change(node, w, ledger)
    out += not_rebuilt(node, w, ledger, upstream_runs)
    return out


def not_rebuilt(
    node: NodeView, w: Window, ledger: Ledger, upstream_runs: tuple[int, ...]
) -> list[Finding]:
    """A model whose last run predates the window while an upstream of it ran inside it."""
    fresh = [t for t in upstream_runs if w.holds(t)]
    if node.last_run_ms is None or node.last_run_ms > w.last_good_ms or not fresh:
        return []
    i = ledger.add(
        "run_record",
        node.urn,
        f"{node.name} was not rebuilt by the latest build, while its upstreams were",
        at_ms=max(fresh),
        last_run_ms=node.last_run_ms,
        upstream_run_ms=max(fresh),
    )
    return [Finding("not_rebuilt", node.urn, None, i, max(fresh))]
