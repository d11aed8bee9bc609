"""The one contract every DataHub backend honours, optional capabilities included.

Every method exists on every backend; what differs between backends is declared in
`capabilities` and answered as data (a read that had to fall back says so in its `Answer`),
so no caller ever probes a graph object for a method or reads state left on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from upstream_dagster.datahub.model import (
    AspectVersion,
    AssertionRun,
    CallCounter,
    Capabilities,
    History,
    Json,
    Lineage,
    Receipt,
    SearchQuery,
    Shape,
    Transaction,
)
from upstream_dagster.datahub.timeline import ALL_CATEGORIES

if TYPE_CHECKING:  # an annotation only: the proposals' module (and estate.yaml's models behind
    # it) is no import of a command that reads Dagster's journal alone, as `queue` does
    from upstream_dagster.conformance.proposals import Change


@runtime_checkable
class MetadataGraph(Protocol):
    transport: str  # "lite" or "gms": every slice reports which one answered
    counter: CallCounter  # one SQL statement on lite, one HTTP request on gms
    capabilities: Capabilities

    @property
    def server(self) -> str:
        """Which DataHub answers, with its version where it says one."""
        ...

    def operation(self, surface: str) -> str:
        """What this backend sends for a surface (search, aspects, custom_assertion, ...)."""
        ...

    # -- reads ---------------------------------------------------------------------------
    def get_aspects(
        self, urns: Sequence[str], aspects: Sequence[str], shape: Shape | None = None
    ) -> dict[str, dict[str, Json]]:
        """Latest ``aspects`` of ``urns``; ``shape`` (when given) is applied to each aspect as
        it is decoded, so a read of a million schemas never holds them all whole."""
        ...

    def search(self, query: SearchQuery) -> list[str]: ...

    def lineage(
        self, urns: Sequence[str], direction: str, as_of_ms: int | None = None
    ) -> Lineage: ...

    def lineage_edges(self, as_of_ms: int | None = None) -> Lineage: ...

    def aspect_history(self, urn: str, aspect: str) -> History: ...

    def histories(self, urn: str, aspects: Sequence[str]) -> dict[str, list[AspectVersion]]:
        """A node's history in one request where `capabilities.aspect_versions` (every
        version with its time); otherwise what the backend keeps with times (timeseries
        aspects) and the current value of the others."""
        ...

    def timeline(
        self,
        urn: str,
        categories: Sequence[str] = ALL_CATEGORIES,
        start_ms: int | None = None,
        end_ms: int | None = None,
    ) -> list[Transaction]: ...

    def assertion_runs(
        self,
        asserted_urns: Sequence[str] | None = None,
        since_ms: int | None = None,
        latest_only: bool = True,
    ) -> list[AssertionRun]: ...

    # -- writes: each returns a receipt, never raises for a refused write -----------------
    def write_aspect(self, urn: str, aspect: str, value: Json) -> Receipt: ...

    def apply_change(self, urn: str, change: Change) -> Receipt:
        """One intended change (add this owner, set this description), applied the way this
        backend can without touching anybody else's values (`datahub.changes`)."""
        ...

    def delete_aspect(self, urn: str, aspect: str) -> Receipt:
        """Remove an aspect; a receipt that says why not where `capabilities.deletes_aspects`
        is false."""
        ...

    def close(self) -> None: ...
