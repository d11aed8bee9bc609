"""The one clock.

Every time-dependent computation in Upstream (freshness, incident age, trailing windows, the
demo data's dates) reads :func:`now`. Setting ``UPSTREAM_CLOCK`` to an ISO-8601 instant pins it,
so a pinned run is reproducible to the byte; unset, it is the current UTC time.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime

CLOCK_ENV = "UPSTREAM_CLOCK"


class ClockError(ValueError):
    """The pinned clock could not be read."""


def parse_instant(text: str) -> datetime:
    """Parse an ISO-8601 instant; a naive one is taken as UTC."""
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise ClockError(
            f"{CLOCK_ENV}={text!r} is not an ISO-8601 instant; "
            f"use e.g. {CLOCK_ENV}=2026-11-29T06:00:00Z or unset it to use the current time"
        ) from exc
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def now() -> datetime:
    """The current instant of the one clock, in UTC."""
    pinned = os.environ.get(CLOCK_ENV, "").strip()
    if pinned:
        return parse_instant(pinned)
    return datetime.now(UTC)


def now_ms() -> int:
    """The clock as epoch milliseconds, DataHub's unit of time."""
    return int(now().timestamp() * 1000)


def observed_ms() -> int:
    """When something was observed: the stamp on a report Upstream sends to DataHub.

    Wall time, not the clock: DataHub's own sources stamp run events with wall time, and two
    observations must never share a stamp (a sensor's run key is an assertion plus its event
    time), even when the clock is pinned. Never an input to a computation.
    """
    import time

    return int(time.time() * 1000)
