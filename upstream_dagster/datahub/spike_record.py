"""`upstream spike --record FILE`: the spike against a DataHub GMS, with every HTTP exchange it
made kept in FILE (secrets redacted: `gms.recorder`), in the format the `gms` tests replay. Sent
back to the project, the file becomes a test that replays the same spike, request by request,
and expects the same verdicts (tests/recorded/, tests/test_spike.py)."""

from __future__ import annotations

import json
from pathlib import Path

from upstream_dagster import clock
from upstream_dagster.datahub import Target, connected
from upstream_dagster.datahub.gms import versions
from upstream_dagster.datahub.gms.recorder import recording
from upstream_dagster.datahub.model import Json
from upstream_dagster.datahub.spike import Surface, spike
from upstream_dagster.errors import UpstreamError

ABOUT = (
    "recorded by `upstream spike --record` from {server} on {day}; request headers, the host "
    "and the token are not kept"
)


def recorded_spike(target: Target, out: Path) -> tuple[str, list[Surface]]:
    """Run the spike against the GMS ``target`` names, recording into ``out``."""
    if not target.gms_url:
        raise UpstreamError(
            "a recording needs a DataHub server: this is the embedded DataHub Lite",
            "set DATAHUB_GMS_URL (and DATAHUB_GMS_TOKEN) to your DataHub, then run "
            "`upstream spike --record FILE` again",
        )
    now = clock.now_ms()
    secrets = (target.gms_token or "",)
    with recording(target.gms_url, secrets) as recorder, connected(target) as graph:
        server = f"DataHub GMS {versions.shown(getattr(graph, 'version', None))}"
        surfaces = spike(graph, mark=recorder.mark, now_ms=now)
    about = ABOUT.format(server=server, day=clock.now().strftime("%Y-%m-%d"))
    record: Json = {
        "_about": about,
        "_spike": {
            "server": server,
            "now_ms": now,
            "results": {s.name: s.result for s in surfaces},
        },
        **recorder.fixtures(about),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1, sort_keys=False) + "\n")
    return server, surfaces
