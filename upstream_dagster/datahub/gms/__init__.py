"""The `gms` backend: a real DataHub over acryl-datahub's `DataHubGraph`.

Aspects come in batches from OpenAPI v3 ``batchGet``; search pages through GraphQL
``scrollAcrossEntities``; downstream lineage through ``scrollAcrossLineage``; the timeline from
``/openapi/v2/timeline/v1``. Every HTTP request counts as one DataHub call. Where a GMS cannot
answer exactly what Lite answers (lineage as of a past instant), the read's `Answer` says so.
Writes go through DataHub's own operations (GraphQL mutations for incidents and assertions,
patches for intended changes) and are reported only once they read back.
"""

from __future__ import annotations

from upstream_dagster.datahub.gms.writes import GmsWrites


class GmsGraph(GmsWrites):
    """A DataHub GMS behind the `MetadataGraph` contract."""


__all__ = ["GmsGraph"]
