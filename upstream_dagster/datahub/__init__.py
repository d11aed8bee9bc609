"""The only package that imports the DataHub SDK.

`open_graph` picks the backend from configuration alone: ``DATAHUB_GMS_URL`` set selects a real
DataHub (`gms`), unset selects the embedded DataHub Lite file in the state folder (`lite`).
"""

from __future__ import annotations

from upstream_dagster.datahub.protocol import MetadataGraph
from upstream_dagster.settings import Settings
from upstream_dagster.settings import load as load_settings


def open_graph(settings: Settings | None = None, *, create: bool = False) -> MetadataGraph:
    from upstream_dagster.datahub import _sdk

    settings = settings or load_settings()
    _sdk.prepare(settings.sdk_home)
    if settings.gms_url:
        from upstream_dagster.datahub.gms import GmsGraph

        return GmsGraph(settings.gms_url, settings.gms_token)
    from upstream_dagster.datahub.lite import LiteGraph

    return LiteGraph(settings.lite_file, create=create)


__all__ = ["MetadataGraph", "open_graph"]
