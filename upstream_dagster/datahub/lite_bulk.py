"""A generated estate written straight into a new DataHub Lite file (the benchmarks')."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from upstream_dagster.datahub import _sdk
from upstream_dagster.datahub.mcp import build_mcp
from upstream_dagster.datahub.model import Json


def bulk_load(path: Path, records: Iterable[tuple[str, str, Json]]) -> int:
    """A new Lite file holding ``records`` (urn, aspect, value), written through Lite's own
    write without waiting for the disk (a benchmark's generated estate); returns how many."""
    _sdk.prepare()
    from datahub.lite.lite_util import get_datahub_lite

    path.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    options = {"journal_mode": "WAL", "busy_timeout": 10000, "synchronous": "OFF"}
    lite = get_datahub_lite({"type": "sqlite", "config": {"file": str(path), "options": options}})
    written = 0
    try:
        for urn, aspect, value in records:
            lite.write(build_mcp(urn, aspect, value))
            written += 1
    finally:
        lite.close()
    return written
