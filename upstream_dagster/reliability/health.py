"""Is one node healthy? Pure judgements over what DataHub recorded about it.

A node is unhealthy when, inside the incident's window (after the last time the symptom's check
passed, and not after the symptom), one of these shows: a failing assertion, a schema change
(a REMOVE and an ADD of the same type in one transaction are a rename), a jump in a column's
NULL share, a shift in a column's mean, a change in its row count, its newest timestamp moving
backwards, or a build that skipped it while its upstreams were rebuilt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from upstream_dagster.reliability.evidence import Finding, Ledger

NULL_JUMP = 0.05  # an absolute rise in a column's share of NULLs
MEAN_SHIFT = 0.30  # a relative change of a column's mean
ROW_CHANGE = 0.10  # a relative change of the row count
DAY_ROW_CHANGE = 0.35  # the same for one day's partition: days vary more than tables
# DataHub learns of a change when metadata is ingested, which in the same build can come a few
# minutes after the check that noticed the symptom.
GRACE_MS = 15 * 60 * 1000


@dataclass(frozen=True)
class Window:
    last_good_ms: int  # the last time the symptom's check passed (0: never)
    symptom_ms: int

    def holds(self, ts: int | None) -> bool:
        return ts is not None and self.last_good_ms < ts <= self.symptom_ms + GRACE_MS


@dataclass(frozen=True)
class FailingCheck:
    assertion: str
    description: str
    column: str | None
    at_ms: int
    message: str = ""
    freshness: bool = False


NOT_EVALUABLE = "not evaluable"  # how a monitor's ERROR message begins when it could not look


def outcome(message: str) -> str:
    """How a failing run reads: a check that could not look (no data in its window, a relation
    that no longer answers) did not fail, and the analysis must not say it did."""
    return "could not evaluate" if message.startswith(NOT_EVALUABLE) else "failed"


@dataclass(frozen=True)
class SchemaEvent:
    at_ms: int
    operation: str  # ADD | REMOVE | MODIFY
    column: str
    native_type: str = ""
    old_column: str | None = None  # set on a MODIFY that DataHub itself reported as a rename
    old_type: str = ""  # the type before, on a MODIFY of a type, where the event carries it


@dataclass(frozen=True)
class ColumnProfile:
    null_share: float
    mean: float | None = None
    maximum: str | None = None


@dataclass(frozen=True)
class Profile:
    at_ms: int
    rows: int
    columns: tuple[tuple[str, ColumnProfile], ...]
    partition: str = (
        ""  # "" the whole table, else the day's partition, e.g. "order_date=2026-11-28"
    )

    @property
    def kind(self) -> str:
        return "day" if self.partition else ""

    def column(self, name: str) -> ColumnProfile | None:
        return dict(self.columns).get(name)


@dataclass(frozen=True)
class NodeView:
    urn: str
    name: str
    failing: tuple[FailingCheck, ...] = ()
    schema: tuple[SchemaEvent, ...] = ()
    profiles: tuple[Profile, ...] = ()  # oldest first
    last_run_ms: int | None = None


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


def _pair(
    profiles: tuple[Profile, ...], w: Window, partition: str
) -> tuple[Profile, Profile] | None:
    """The profile the last healthy build took, and the one the symptom's build took."""
    mine = [p for p in profiles if p.kind == partition]
    before = [p for p in mine if p.at_ms <= w.last_good_ms]
    during = [p for p in mine if w.holds(p.at_ms)]
    if not before or not during:
        return None
    return before[-1], during[-1]


def observed(node: NodeView, w: Window) -> bool:
    """Whether anything could be seen of ``node`` in the window: a profile to compare with the
    last healthy build's, a failing check, or a schema change. A node nothing was observed on is
    unknown, not healthy: it neither clears nor contradicts what passes through it."""
    changed = any(w.holds(e.at_ms) for e in node.schema)
    return bool(node.failing) or changed or _pair(node.profiles, w, "") is not None


def _profile_findings(node: NodeView, w: Window, ledger: Ledger) -> list[Finding]:
    out: list[Finding] = []
    seen: set[tuple[str, str | None]] = set()
    for partition, rows_limit in (("", ROW_CHANGE), ("day", DAY_ROW_CHANGE)):
        for f in _partition_findings(node, w, ledger, partition, rows_limit):
            if (f.failure_class, f.column) not in seen:  # the whole table speaks first
                seen.add((f.failure_class, f.column))
                out.append(f)
    return out


def _partition_findings(
    node: NodeView, w: Window, ledger: Ledger, partition: str, rows_limit: float
) -> list[Finding]:
    pair = _pair(node.profiles, w, partition)
    if pair is None:
        return []
    old, new = pair
    where = " on the last complete day" if partition else ""
    out = []
    if old.rows and abs(new.rows / old.rows - 1) >= rows_limit:
        kind = "volume_drop" if new.rows < old.rows else "volume_jump"
        i = ledger.add(
            "profile",
            node.urn,
            f"{node.name} holds {new.rows:,} rows{where}, {new.rows / old.rows - 1:+.0%} "
            f"against {old.rows:,} in the last healthy build",
            at_ms=new.at_ms,
            rows_before=old.rows,
            rows_after=new.rows,
            partition=new.partition or "table",
        )
        out.append(Finding(kind, node.urn, None, i, new.at_ms))
    for name, now in new.columns:
        was = old.column(name)
        if was is None:
            continue
        if now.null_share - was.null_share >= NULL_JUMP or (
            was.null_share == 0 and now.null_share > 0.01
        ):
            i = ledger.add(
                "profile",
                node.urn,
                f"{node.name}.{name} is {now.null_share:.0%} NULL{where}, was {was.null_share:.0%}",
                column=name,
                at_ms=new.at_ms,
                null_before=round(was.null_share, 4),
                null_after=round(now.null_share, 4),
                partition=new.partition or "table",
            )
            out.append(Finding("null_jump", node.urn, name, i, new.at_ms))
        elif (
            was.mean is not None
            and now.mean is not None
            and was.mean != 0
            and abs(now.mean / was.mean - 1) >= MEAN_SHIFT
        ):
            i = ledger.add(
                "profile",
                node.urn,
                f"the mean of {node.name}.{name}{where} moved from {was.mean:,.4g} to "
                f"{now.mean:,.4g} "
                f"({now.mean / was.mean - 1:+.0%})",
                column=name,
                at_ms=new.at_ms,
                mean_before=was.mean,
                mean_after=now.mean,
                partition=new.partition or "table",
            )
            out.append(Finding("value_shift", node.urn, name, i, new.at_ms))
        elif (
            not partition
            and now.mean is None  # a date or time, not a number: the newest data went back
            and was.maximum
            and now.maximum
            and now.maximum < was.maximum
            and new.rows < old.rows
        ):
            i = ledger.add(
                "profile",
                node.urn,
                f"the newest {node.name}.{name} went back from {was.maximum} to {now.maximum}: "
                "recent data is missing",
                column=name,
                at_ms=new.at_ms,
                max_before=was.maximum,
                max_after=now.maximum,
            )
            out.append(Finding("stale", node.urn, name, i, new.at_ms))
    return out


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
    out += _profile_findings(node, w, ledger)
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
