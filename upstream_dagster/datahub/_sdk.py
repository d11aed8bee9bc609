"""The single place the DataHub SDK is first imported.

Importing `datahub` writes ``~/.datahub/telemetry-config.json``. Upstream keeps all state in its
own folder, so the first import runs with ``HOME`` pointed at the state folder's ``sdk_home``;
the SDK captures that path in module constants and the real ``HOME`` is restored at once.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

_lock = threading.Lock()
_done = False


def prepare(sdk_home: Path | None = None) -> None:
    """Call before any SDK import; idempotent. ``sdk_home`` defaults to the settings' one."""
    global _done
    with _lock:
        if _done:
            return
        if sdk_home is None:
            from upstream_dagster.settings import load

            sdk_home = load().sdk_home
        os.environ.setdefault("DATAHUB_TELEMETRY_ENABLED", "false")
        sdk_home.mkdir(parents=True, exist_ok=True)
        saved = os.environ.get("HOME")
        os.environ["HOME"] = str(sdk_home)
        try:
            import datahub.cli.config_utils  # noqa: F401
            import datahub.telemetry.telemetry  # noqa: F401
        finally:
            if saved is None:
                os.environ.pop("HOME", None)
            else:
                os.environ["HOME"] = saved
        _done = True


def timeseries_aspects() -> frozenset[str]:
    """The aspects DataHub keeps as time series (run events, profiles, operations), as the
    SDK's own schema classes declare them."""
    prepare()
    from datahub.metadata.schema_classes import ASPECT_NAME_MAP

    return frozenset(
        name
        for name, cls in ASPECT_NAME_MAP.items()
        if getattr(cls, "ASPECT_TYPE", "") == "timeseries"
    )


def close_lite(writer: Any, rebuild: bool) -> None:
    """Close DataHub Lite's ``writer``; without ``rebuild``, its connection alone, skipping the
    browse tree's rebuild from every aspect in the store (a second or more per close on the demo,
    growing with the estate). A Lite without that split closes as it always does."""
    connection_only = getattr(getattr(writer, "lite", writer), "_close_connection", None)
    if rebuild or connection_only is None:
        writer.close()
    else:
        connection_only()
