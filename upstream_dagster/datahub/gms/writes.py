"""How the `gms` backend writes: DataHub's own operations, in the shape the connected release
takes (`routes`), each reported only once it reads back. Incidents through
``raiseIncident``/``updateIncidentStatus``, assertions through
``upsertCustomAssertion``/``reportAssertionResult`` (or their aspects before 1.7 and 1.6),
structured properties and column tags as patches of what changed, an intended change as the
SDK's PATCH where the release understands it and otherwise as a read-modify-write guarded by a
conditional write (`conditional`)."""

from __future__ import annotations

from upstream_dagster.conformance.proposals import Change
from upstream_dagster.datahub import changes
from upstream_dagster.datahub.changes import WRITERS
from upstream_dagster.datahub.gms.client import first_line
from upstream_dagster.datahub.gms.conditional import ConcurrentEdits
from upstream_dagster.datahub.gms.incident_writes import IncidentWrites
from upstream_dagster.datahub.gms.property_writes import PropertyWrites, typed
from upstream_dagster.datahub.gms.routes import patches
from upstream_dagster.datahub.model import Json, Receipt


class GmsWrites(IncidentWrites, PropertyWrites):
    def write_aspect(self, urn: str, aspect: str, value: Json) -> Receipt:
        """Write one aspect the way a GMS wants it written: incidents and assertions through
        their GraphQL mutations, structured properties as patches of the changed properties,
        anything else as an upsert. Each write is reported only once it reads back."""
        special = {
            "incidentInfo": self._write_incident,
            "assertionInfo": self._write_assertion,
            "assertionRunEvent": self._write_run_event,
            "structuredProperties": self._write_structured,
            "editableSchemaMetadata": self._write_field_tags,
        }.get(aspect)
        from datahub.configuration.common import GraphError

        if aspect == "documentInfo" and not self.supports("document"):
            return Receipt(
                urn,
                aspect,
                False,
                f"{self.server} has no Document entity (DataHub 1.4 added it): the "
                "post-mortem stays in the incident's description",
            )
        try:
            if special is not None:
                return special(urn, value)
            return self._upsert(urn, aspect, value)
        except (KeyError, ValueError, TypeError) as exc:
            return Receipt(urn, aspect, False, f"not a valid {aspect} for GMS: {exc}")
        except ConcurrentEdits as exc:
            return Receipt(urn, aspect, False, f"{exc.problem}; {exc.fix}")
        except (GraphError, OSError) as exc:  # refused or unreachable: nothing is reported written
            return Receipt(urn, aspect, False, f"DataHub GMS refused the write: {first_line(exc)}")

    # -- intended changes: the SDK's PATCH of only the change, or a merge every 1.x takes ---------
    def apply_change(self, urn: str, change: Change) -> Receipt:
        """Apply one intended change so other people's values are never touched: the SDK's
        PATCH where this release understands it, else a conditional read-modify-write."""
        from datahub.configuration.common import GraphError

        aspect = WRITERS[change.kind].aspect
        try:
            if patches(self.version, change.kind):
                return self._patch(urn, change)
            return self._merge(urn, change)
        except ConcurrentEdits as exc:
            return Receipt(urn, aspect, False, f"{exc.problem}; {exc.fix}")
        except (GraphError, OSError) as exc:
            return Receipt(urn, aspect, False, f"DataHub GMS refused the change: {first_line(exc)}")

    def _numbers(self, change: Change) -> set[str]:
        if change.kind != "set_structured_property":
            return set()
        return self._number_typed(change.values[:1])

    def _patch(self, urn: str, change: Change) -> Receipt:
        from datahub.specific.aspect_helpers.institutional_memory import (
            HasInstitutionalMemoryPatch,
        )
        from datahub.specific.dataset import DatasetPatchBuilder

        class Builder(DatasetPatchBuilder, HasInstitutionalMemoryPatch):
            """The SDK's dataset patches plus its institutional-memory patch (keyed by URL)."""

        writer = WRITERS[change.kind]
        numbers = self._numbers(change)
        builder = Builder(urn)
        writer.patch(builder, change.values, numbers)
        for mcp in builder.build():  # one Rest.li ingestProposal per patch
            self._graph.emit_mcp(mcp)
        return self._read_back(urn, change, numbers, "patched")

    def _merge(self, urn: str, change: Change) -> Receipt:
        """The change merged into the aspect as the server holds it, written only if nobody
        wrote the aspect meanwhile (else read and merged again)."""
        writer = WRITERS[change.kind]
        numbers = self._numbers(change)

        def merge(current: Json | None) -> Json | None:
            if current is not None and writer.reads_back(change.values, current, numbers):
                return None
            merged = writer.merge(current, change.values)
            return typed(merged, numbers) if numbers else merged

        tries = self.conditional(urn, writer.aspect, merge)
        if tries == 0:
            return Receipt(urn, writer.aspect, True, "already held in DataHub GMS")
        again = f" after {tries - 1} concurrent edit(s)" if tries > 1 else ""
        return self._read_back(urn, change, numbers, f"merged with If-Version-Match{again}")

    def _read_back(self, urn: str, change: Change, numbers: set[str], how: str) -> Receipt:
        writer = WRITERS[change.kind]
        back = changes.current(self, urn, writer.aspect)
        if back is None or not writer.reads_back(change.values, back, numbers):
            return Receipt(
                urn,
                writer.aspect,
                False,
                f"GMS accepted the change ({how}) but it did not read back",
            )
        return Receipt(urn, writer.aspect, True, f"{how} in DataHub GMS and read back")

    def delete_aspect(self, urn: str, aspect: str) -> Receipt:
        return Receipt(
            urn, aspect, False, "the gms backend does not remove aspects; remove it by hand"
        )
