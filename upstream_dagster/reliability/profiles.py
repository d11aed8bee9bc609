"""What a node's profiles say changed between the last healthy build and the symptom's: rows,
a column's NULL share, mean, newest value, distinct values and value frequencies, over the
whole table and its last complete day.

A change past its threshold is a finding that makes the node unhealthy. A smaller one (a few
rows lost from a lookup, one percent duplicated, a single code value gone) is recorded as a
*minor* finding: not enough to call the node broken on its own, but what the check's own grain
can tie to the rows that failed (`grain`), and what tells a model whose data moved while its
code did not that one of its inputs changed.
"""

from __future__ import annotations

from upstream_dagster.reliability.evidence import Finding, Ledger
from upstream_dagster.reliability.health_types import ColumnProfile, NodeView, Profile, Window

NULL_JUMP = 0.05  # an absolute rise in a column's share of NULLs
MEAN_SHIFT = 0.30  # a relative change of a column's mean
ROW_CHANGE = 0.10  # a relative change of the row count
DAY_ROW_CHANGE = 0.35  # the same for one day's partition: days vary more than tables
TINY = 1e-9  # below this, a relative difference is arithmetic, not data


def pair(
    profiles: tuple[Profile, ...], w: Window, partition: str
) -> tuple[Profile, Profile] | None:
    """The profile the last healthy build took, and the one the symptom's build took."""
    mine = [p for p in profiles if p.kind == partition]
    before = [p for p in mine if p.at_ms <= w.last_good_ms]
    during = [p for p in mine if w.holds(p.at_ms)]
    if not before or not during:
        return None
    return before[-1], during[-1]


def wrote_anew(node: NodeView, w: Window) -> bool:
    """Whether what the node holds changed in the window, as its profiles before and during say
    (no such pair: assumed so). A snapshot reads the clock, so every refresh runs it; run on a
    source that did not change, it writes nothing new."""
    found = pair(node.profiles, w, "")
    return found is None or (found[0].rows, found[0].columns) != (found[1].rows, found[1].columns)


def findings(node: NodeView, w: Window, ledger: Ledger) -> list[Finding]:
    """Every profile finding on ``node``, the whole table's first (a day repeats none of them)."""
    out: list[Finding] = []
    seen: set[tuple[str, str | None]] = set()
    for partition, rows_limit in (("", ROW_CHANGE), ("day", DAY_ROW_CHANGE)):
        p = pair(node.profiles, w, partition)
        if p is None:
            continue
        for f in _rows(node, p, rows_limit, ledger) + _columns(node, p, ledger):
            if (f.failure_class, f.column) not in seen:
                seen.add((f.failure_class, f.column))
                out.append(f)
    return out


def _where(p: Profile) -> str:
    return " on the last complete day" if p.partition else ""


def _rows(
    node: NodeView, p: tuple[Profile, Profile], limit: float, ledger: Ledger
) -> list[Finding]:
    old, new = p
    if not old.rows or new.rows == old.rows:
        return []
    change = new.rows / old.rows - 1
    kind = "volume_drop" if new.rows < old.rows else "volume_jump"
    dup = kind == "volume_jump" and _duplicated(old, new)
    i = ledger.add(
        "profile",
        node.urn,
        f"{node.name} holds {new.rows:,} rows{_where(new)}, {change:+.1%} against {old.rows:,} "
        "in the last healthy build"
        + (f" (no new distinct value of {dup}: rows came twice)" if dup else ""),
        at_ms=new.at_ms,
        rows_before=old.rows,
        rows_after=new.rows,
        partition=new.partition or "table",
        duplicated=dup or "",
    )
    return [Finding(kind, node.urn, None, i, new.at_ms, minor=abs(change) < limit)]


def _duplicated(old: Profile, new: Profile) -> str:
    """A column that held one value per row and gained rows but no distinct value: the new
    rows repeat old ones."""
    for name, now in new.columns:
        was = old.column(name)
        if (
            was is not None
            and was.distinct is not None
            and was.distinct == old.rows - round(was.null_share * old.rows)
            and now.distinct == was.distinct
        ):
            return name
    return ""


def _columns(node: NodeView, p: tuple[Profile, Profile], ledger: Ledger) -> list[Finding]:
    old, new = p
    out = []
    for name, now in new.columns:
        was = old.column(name)
        if was is None:
            continue
        found = (
            _nulls(node, name, was, now, new, ledger)
            or _mean(node, name, was, now, new, ledger)
            or _values(node, name, was, now, new, ledger)
            or _newest(node, name, was, now, old, new, ledger)
            or _moved_times(node, name, was, now, old, new, ledger)
        )
        out += found
    return out


def _nulls(node: NodeView, name: str, was: ColumnProfile, now: ColumnProfile, new: Profile,
           ledger: Ledger) -> list[Finding]:  # fmt: skip
    rise = now.null_share - was.null_share
    if rise <= TINY:
        return []
    major = rise >= NULL_JUMP or (was.null_share == 0 and now.null_share > 0.01)
    i = ledger.add(
        "profile",
        node.urn,
        f"{node.name}.{name} is {now.null_share:.1%} NULL{_where(new)}, was {was.null_share:.1%}",
        column=name,
        at_ms=new.at_ms,
        null_before=round(was.null_share, 4),
        null_after=round(now.null_share, 4),
        partition=new.partition or "table",
    )
    return [Finding("null_jump", node.urn, name, i, new.at_ms, minor=not major)]


def _mean(node: NodeView, name: str, was: ColumnProfile, now: ColumnProfile, new: Profile,
          ledger: Ledger) -> list[Finding]:  # fmt: skip
    if was.mean is None or now.mean is None or was.mean == 0:
        return []
    shift = now.mean / was.mean - 1
    if abs(shift) <= 1e-4:  # the profile keeps six significant digits
        return []
    i = ledger.add(
        "profile",
        node.urn,
        f"the mean of {node.name}.{name}{_where(new)} moved from {was.mean:,.4g} to "
        f"{now.mean:,.4g} ({shift:+.1%})",
        column=name,
        at_ms=new.at_ms,
        mean_before=was.mean,
        mean_after=now.mean,
        partition=new.partition or "table",
    )
    return [Finding("value_shift", node.urn, name, i, new.at_ms, minor=abs(shift) < MEAN_SHIFT)]


def _values(node: NodeView, name: str, was: ColumnProfile, now: ColumnProfile, new: Profile,
            ledger: Ledger) -> list[Finding]:  # fmt: skip
    """A categorical column whose set of values changed: one appeared or one vanished."""
    if not was.values or not now.values:
        return []
    before, after = dict(was.values), dict(now.values)
    came, went = sorted(set(after) - set(before)), sorted(set(before) - set(after))
    if not came and not went:
        return []
    parts = ([f"{', '.join(map(repr, came))} appeared"] if came else []) + (
        [f"{', '.join(map(repr, went))} vanished"] if went else []
    )
    i = ledger.add(
        "profile",
        node.urn,
        f"the values of {node.name}.{name}{_where(new)} changed: {'; '.join(parts)}",
        column=name,
        at_ms=new.at_ms,
        came=",".join(came),
        went=",".join(went),
        partition=new.partition or "table",
    )
    return [Finding("value_change", node.urn, name, i, new.at_ms)]


def _newest(node: NodeView, name: str, was: ColumnProfile, now: ColumnProfile, old: Profile,
            new: Profile, ledger: Ledger) -> list[Finding]:  # fmt: skip
    """A date or time whose newest value went back while rows were lost: recent data missing."""
    if (
        new.partition
        or now.mean is not None
        or not (was.maximum and now.maximum)
        or not now.maximum < was.maximum
        or new.rows >= old.rows
    ):
        return []
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
    return [Finding("stale", node.urn, name, i, new.at_ms)]


def _moved_times(node: NodeView, name: str, was: ColumnProfile, now: ColumnProfile, old: Profile,
                 new: Profile, ledger: Ledger) -> list[Finding]:  # fmt: skip
    """A date or time column whose earliest or latest value moved while the rows stayed: the
    timestamps themselves shifted."""
    if new.partition or now.mean is not None or new.rows != old.rows or not now.maximum:
        return []
    if (was.maximum, was.minimum) == (now.maximum, now.minimum) or not was.maximum:
        return []
    i = ledger.add(
        "profile",
        node.urn,
        f"the times of {node.name}.{name} moved: from {was.minimum} .. {was.maximum} to "
        f"{now.minimum} .. {now.maximum}, with as many rows",
        column=name,
        at_ms=new.at_ms,
        max_before=was.maximum,
        max_after=now.maximum,
    )
    return [Finding("value_shift", node.urn, name, i, new.at_ms)]


def moved(node: NodeView, w: Window, column: str | None) -> bool | None:
    """Whether the data a check reads on ``node`` changed between the last healthy build and the
    symptom's: ``column``'s profile, or the rows for a check on the whole table. None when no
    pair of profiles shows either way."""
    seen = False
    for partition in ("", "day"):
        p = pair(node.profiles, w, partition)
        if p is None:
            continue
        seen = True
        old, new = p
        if column is None:
            if old.rows != new.rows:
                return True
            continue
        was, now = old.column(column), new.column(column)
        if was is None or now is None:
            return True  # the column came or went
        if (
            abs(now.null_share - was.null_share) > TINY
            or (was.mean is not None and now.mean is not None and abs(now.mean - was.mean) >
                max(abs(was.mean), 1.0) * 1e-6)
            or was.maximum != now.maximum
            or was.distinct != now.distinct
            or was.values != now.values
            or (old.rows != new.rows)
        ):  # fmt: skip
            return True
    return False if seen else None
