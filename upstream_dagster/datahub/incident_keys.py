"""An incident's key read back, and its short id: what the journal's readers (`upstream show`,
`upstream incidents`, the queue) need of the key, without the investigation's DataHub reads."""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime

from upstream_dagster.errors import UpstreamError

# DATASET@UTC-TIME~ASSERTION_ID; the id and the millisecond time make it exact.
_KEY = re.compile(
    r"^[^@~]*@(?P<iso>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(?P<ms>\d{3})Z~(?P<id>[A-Za-z0-9_.-]+)$"
)
_OLD_KEY = re.compile(r"^(?P<id>[A-Za-z0-9_.-]+)@(?P<ts>\d+)$")  # ASSERTION_ID@MILLIS, before


def short_id(key: str) -> str:
    """An incident's short id, six hex characters of its key's hash: what a person types
    (``upstream show 3f9a1c``) and reads in the UI, the same on every machine."""
    return hashlib.sha256(key.encode()).hexdigest()[:6]


def parse_key(key: str) -> tuple[str, int]:
    match = _KEY.match(key)
    if match:
        at = datetime.strptime(match["iso"], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
        return f"urn:li:assertion:{match['id']}", int(at.timestamp()) * 1000 + int(match["ms"])
    old = _OLD_KEY.match(key)
    if not old:
        raise UpstreamError(
            f"{key!r} is not an incident key",
            "incident keys look like DATASET@TIME~ASSERTION_ID; list them with `upstream queue`",
        )
    return f"urn:li:assertion:{old['id']}", int(old["ts"])
