"""The only package that imports the DataHub SDK.

`open_graph` picks the backend from configuration alone: a GMS address selects a real DataHub
(`gms`), none selects the embedded DataHub Lite file in the state folder (`lite`). `connected`
is the same as a context manager that always closes the graph.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from upstream_dagster.datahub import _sdk
from upstream_dagster.datahub.protocol import MetadataGraph
from upstream_dagster.errors import DataHubUnavailable, UpstreamError, redact
from upstream_dagster.settings import Settings


@dataclass(frozen=True)
class Target:
    """Which DataHub: a GMS address (and token), or else the DataHub Lite file."""

    lite_file: Path
    sdk_home: Path
    gms_url: str | None = None
    gms_token: str | None = None

    @property
    def backend(self) -> str:
        return "gms" if self.gms_url else "lite"

    @property
    def where(self) -> str:
        return redact(self.gms_url) if self.gms_url else str(self.lite_file)

    @classmethod
    def of(cls, settings: Settings) -> Target:
        return cls(settings.lite_file, settings.sdk_home, settings.gms_url, settings.gms_token)


def open_graph(target: Target | Settings, *, create: bool = False) -> MetadataGraph:
    where = target if isinstance(target, Target) else Target.of(target)
    for folder in (where.sdk_home.parent, where.lite_file.parent):
        if folder.exists() and not folder.is_dir():
            raise DataHubUnavailable(
                f"the state folder {folder} is a file, not a folder",
                "point UPSTREAM_STATE_DIR at a folder (it is created if missing)",
            )
    # Each backend is imported when it is opened: a command that only reads Dagster's journal
    # (queue, show) never pays for either.
    if where.gms_url:
        _sdk.prepare(where.sdk_home)
        from upstream_dagster.datahub.gms import GmsGraph

        return GmsGraph(where.gms_url, where.gms_token)
    from upstream_dagster.datahub.lite import LiteGraph

    # DataHub Lite is read with SQL: the SDK (a third of a second to import) waits for a write
    return LiteGraph(where.lite_file, create=create, sdk_home=where.sdk_home)


def whoami(target: Target | Settings, token: str) -> str:
    """The DataHub user a reviewer's own token belongs to (a GMS only: the embedded DataHub Lite
    has no users or tokens). The server's system client id (configured as on the server, with
    DATAHUB_SYSTEM_CLIENT_ID) names nobody."""
    from upstream_dagster.settings import load

    where = target if isinstance(target, Target) else Target.of(target)
    system = (target if isinstance(target, Settings) else load()).datahub_system_client_id
    if not where.gms_url:
        raise UpstreamError(
            "estate.yaml says DataHub identifies approvers, but this is the embedded DataHub "
            "Lite, which has no users or tokens",
            "set DATAHUB_GMS_URL to your DataHub, or set policies.identity to signed",
        )
    _sdk.prepare(where.sdk_home)
    from upstream_dagster.datahub.gms.identity import whoami as ask

    return ask(where.gms_url, token, system_client_id=system)


@contextmanager
def connected(target: Target | Settings, *, create: bool = False) -> Iterator[MetadataGraph]:
    """The configured DataHub for the length of a block, closed however the block ends."""
    graph = open_graph(target, create=create)
    try:
        yield graph
    finally:
        graph.close()


__all__ = ["MetadataGraph", "Target", "connected", "open_graph", "whoami"]
