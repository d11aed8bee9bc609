"""The one contract every DataHub backend honours."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from upstream_dagster.datahub.model import (
    AspectVersion,
    AssertionRun,
    CallCounter,
    Json,
    LineageEdge,
    Receipt,
    SearchQuery,
    Transaction,
)


@runtime_checkable
class MetadataGraph(Protocol):
    transport: str  # "lite" or "gms": every slice reports which one answered
    counter: CallCounter  # one SQL statement on lite, one HTTP request on gms

    def get_aspects(
        self, urns: Sequence[str], aspects: Sequence[str]
    ) -> dict[str, dict[str, Json]]: ...

    def search(self, query: SearchQuery) -> list[str]: ...

    def lineage(
        self, urns: Sequence[str], direction: str, as_of_ms: int | None = None
    ) -> list[LineageEdge]: ...

    def lineage_edges(self, as_of_ms: int | None = None) -> list[LineageEdge]: ...

    def aspect_history(self, urn: str, aspect: str) -> list[AspectVersion]: ...

    def timeline(
        self,
        urn: str,
        categories: Sequence[str] = ...,
        start_ms: int | None = None,
        end_ms: int | None = None,
    ) -> list[Transaction]: ...

    def assertion_runs(
        self,
        asserted_urns: Sequence[str] | None = None,
        since_ms: int | None = None,
        latest_only: bool = True,
    ) -> list[AssertionRun]: ...

    def write_aspect(self, urn: str, aspect: str, value: Json) -> Receipt: ...

    def close(self) -> None: ...
