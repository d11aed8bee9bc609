"""Incidents as a person follows them: a short id for each (accepted wherever a key is), and
one row per incident with its dataset, check, status, age, confidence and owner, read from the
journal (the verdicts, the fixes and the resolutions) and the gate's store (who claimed a fix)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from upstream_dagster.datahub.incident_keys import parse_key, short_id
from upstream_dagster.defs import journal
from upstream_dagster.errors import UpstreamError
from upstream_dagster.spec.urns import short
from upstream_dagster.state import claims
from upstream_dagster.state.store import GateStore

if TYPE_CHECKING:
    from upstream_dagster.defs.instance import Journal

LATEST = "latest"
MIN_PREFIX = 4  # characters of a short id a person may type
SCANNED = 500  # the latest verdicts and resolutions read


@dataclass(frozen=True)
class IncidentRow:
    id: str
    key: str
    dataset: str
    check: str
    status: str
    opened_ms: int
    closed_ms: int  # when it was resolved (0 while it is open)
    confidence: float
    owner: str
    conclusion: str
    digest: str

    def age(self, now_ms: int) -> str:
        """How long it has been open, or how long it took to resolve."""
        took = duration((self.closed_ms or now_ms) - self.opened_ms)
        return f"resolved in {took}" if self.closed_ms else took


def duration(ms: int) -> str:
    """``ms`` as a person says it: 45 s, 12 min, 3 h 05 min, 2 d 4 h."""
    seconds = max(ms, 0) // 1000
    if seconds < 60:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes:02d} min"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h"


def _opened(key: str) -> int:
    try:
        return parse_key(key)[1]
    except UpstreamError:
        return 0


def _parts(key: str) -> tuple[str, str]:
    """The dataset and check a key names (for a verdict recorded before they were kept)."""
    head = key.split("@", 1)[0]
    dataset, _, check = head.partition(":")
    return dataset, check


def rows(instance: Journal, store: GateStore) -> list[IncidentRow]:
    """Every investigated incident, the newest first."""
    verdicts = journal.by_partition(instance, journal.VERDICT, SCANNED)
    resolutions = journal.by_partition(instance, journal.RESOLUTION, SCANNED)
    out = []
    for key, meta in verdicts.items():
        v = journal.summary_of(key, meta)
        done = resolutions.get(key, {})
        if done.get("resolved") is True:
            status = "resolved"
        elif done:
            status = "fix applied, check still fails"
        elif not v.concluded:
            status = "open: abstained, needs a person"
        elif not v.actionable:
            status = "open: no fix to apply"
        elif claims.claimed_by(store, claims.key_for("fix", v.digest)):
            status = "fix approved, rebuilding"
        else:
            status = "open: fix awaits approval"
        dataset, check = _parts(key)
        out.append(
            IncidentRow(
                id=short_id(key),
                key=key,
                dataset=str(meta.get("dataset") or dataset),
                check=str(meta.get("check") or check),
                status=status,
                opened_ms=_opened(key),
                closed_ms=_closed(done) if status == "resolved" else 0,
                confidence=v.confidence,
                owner=_owners(str(meta.get("owners") or "")),
                conclusion=v.conclusion,
                digest=v.digest,
            )
        )
    return sorted(out, key=lambda r: (r.opened_ms, r.key), reverse=True)


def resolve(instance: Journal, given: str) -> str:
    """The incident key ``given`` names: the key itself, its short id (or a unique start of
    it, four characters at least), or ``latest`` (the incident investigated last)."""
    given = given.strip()
    keys = _investigated(instance)
    if given in keys:
        return given
    if not keys:
        raise UpstreamError(
            f"no incident has been investigated, so {_cut(given)!r} names none",
            "run `upstream investigate` (or wait for the failing_assertions sensor)",
        )
    if given.lower() == LATEST:
        return keys[0]
    wanted = given.lower().removeprefix("#")
    found = [k for k in keys if short_id(k).startswith(wanted)] if len(wanted) >= MIN_PREFIX else []
    if len(found) == 1:
        return found[0]
    listed = ", ".join(f"{short_id(k)} ({_cut(k, 60)})" for k in (found or keys)[:5])
    if found:
        raise UpstreamError(
            f"{_cut(given)!r} is the start of {len(found)} incident ids: {listed}",
            "type more of the id (`upstream incidents` lists them)",
        )
    raise UpstreamError(
        f"no incident is {_cut(given)!r}; the latest: {listed}",
        "pass an id from `upstream incidents`, a whole incident key, or `latest`",
    )


def _investigated(instance: Journal) -> list[str]:
    """Investigated incident keys, the one investigated last first."""
    return list(journal.by_partition(instance, journal.VERDICT, SCANNED))


def _closed(resolution: dict[str, Any]) -> int:
    """When a resolution resolved it, in ms (its ``resolved_at`` timestamp is in seconds)."""
    at = resolution.get("resolved_at")
    return int(float(at) * 1000) if isinstance(at, int | float) else 0


def _owners(text: str) -> str:
    """Owners by their names (a verdict recorded before names were kept holds URNs)."""
    names = [short(o.strip()) for o in text.split(",") if o.strip()]
    return ", ".join(names) or "nobody in DataHub"


def _cut(text: str, most: int = 40) -> str:
    return text if len(text) <= most else text[: most - 3] + "..."
