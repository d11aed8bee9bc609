"""How the `gms` backend writes: DataHub's own operations, each reported only once it reads
back. Incidents through ``raiseIncident``/``updateIncidentStatus``, assertions through
``upsertCustomAssertion``/``reportAssertionResult``, structured properties and column tags as
patches of what changed, an intended change as the SDK's PATCH (`datahub.changes`)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from upstream_dagster.conformance.proposals import Change
from upstream_dagster.datahub import changes
from upstream_dagster.datahub.changes import WRITERS, set_property_patch
from upstream_dagster.datahub.gms.client import PAGE, first_line
from upstream_dagster.datahub.gms.reads import GmsReads, run_events
from upstream_dagster.datahub.graphql_ops import (
    FIND_INCIDENTS,
    RAISE_INCIDENT,
    RUN_EVENTS,
    UPDATE_INCIDENT_STATUS,
)
from upstream_dagster.datahub.mcp import build_mcp
from upstream_dagster.datahub.model import PROPERTIES_PREFIX, Json, Receipt
from upstream_dagster.datahub.values import field_tags, property_values, shown

# incidentInfo.priority (0 = most urgent) -> GraphQL IncidentPriority
PRIORITY = {0: "CRITICAL", 1: "HIGH", 2: "MEDIUM", 3: "LOW"}
INCIDENT_KEY = "Upstream incident key: "
ASSERTION_PLATFORM = "urn:li:dataPlatform:upstream"


class GmsWrites(GmsReads):
    # seconds to wait before each read-back of an asynchronously indexed write
    read_back_waits: tuple[float, ...] = (0.0, 0.25, 0.5, 1.0, 2.0)

    # -- writes ---------------------------------------------------------------------------
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
                f"{self.server} has no Document entity (DataHub 1.7 added it): the "
                "post-mortem stays in the incident's description",
            )
        try:
            if special is not None:
                return special(urn, value)
            return self._upsert(urn, aspect, value)
        except (KeyError, ValueError, TypeError) as exc:
            return Receipt(urn, aspect, False, f"not a valid {aspect} for GMS: {exc}")
        except (GraphError, OSError) as exc:  # refused or unreachable: nothing is reported written
            return Receipt(urn, aspect, False, f"DataHub GMS refused the write: {first_line(exc)}")

    def _upsert(self, urn: str, aspect: str, value: Json) -> Receipt:
        try:
            mcp = build_mcp(urn, aspect, value)
        except (KeyError, ValueError, TypeError, AttributeError) as exc:
            return Receipt(urn, aspect, False, f"not a valid {aspect} aspect: {exc}")
        self._graph.emit_mcp(mcp)
        # A write is reported only once it reads back.
        back = self.get_aspects([urn], [aspect]).get(urn, {}).get(aspect)
        if back is None:
            return Receipt(urn, aspect, False, "GMS accepted the write but it did not read back")
        return Receipt(urn, aspect, True, "written to DataHub GMS and read back")

    # -- incidents: raiseIncident / updateIncidentStatus ---------------------------------
    def _find_incident(self, dataset: str, key: str) -> str | None:
        """The incident Upstream raised for this key (the key rides in its description)."""
        start = 0
        while True:
            data = self._gql(FIND_INCIDENTS, {"urn": dataset, "start": start, "count": PAGE})
            found = ((data.get("dataset") or {}).get("incidents")) or {}
            for incident in found.get("incidents") or []:
                if f"{INCIDENT_KEY}{key}" in str(incident.get("description") or ""):
                    return str(incident["urn"])
            start += PAGE
            if start >= int(found.get("total") or 0):
                return None

    def _write_incident(self, key: str, info: Json) -> Receipt:
        status = {
            k: info["status"][k] for k in ("state", "stage", "message") if k in info["status"]
        }
        resources = list(info["entities"])
        urn = self._find_incident(resources[0], key)
        if urn is None:
            # no `source`: raiseIncident records MANUAL whatever it is sent
            # (RaiseIncidentResolver.mapIncidentInfo), so nothing may depend on it
            raise_input: Json = {
                "type": info["type"],
                "title": info.get("title"),
                "description": f"{info.get('description', '')}\n\n{INCIDENT_KEY}{key}",
                "resourceUrns": resources,
                "startedAt": info.get("startedAt"),
                "status": status,
                "priority": PRIORITY.get(info.get("priority", 2), "MEDIUM"),
                "assigneeUrns": [a["actor"] for a in info.get("assignees") or []],
            }
            if info["type"] == "CUSTOM":
                raise_input["customType"] = info["customType"]
            urn = str(self._gql(RAISE_INCIDENT, {"input": raise_input})["raiseIncident"])
            did = "raised"
        else:
            self._gql(UPDATE_INCIDENT_STATUS, {"urn": urn, "input": status})
            did = f"moved to {status['state']}/{status.get('stage')}"
        # read the aspect itself: exact on every 1.x, where the GraphQL incidentStatus field
        # exists only from 1.3
        back = changes.current(self, urn, "incidentInfo") or {}
        got = back.get("status") or {}
        if back.get("type") != info["type"] or got.get("state") != status["state"]:
            return Receipt(urn, "incidentInfo", False, f"incident {did} but did not read back")
        return Receipt(urn, "incidentInfo", True, f"incident {did} in DataHub GMS and read back")

    # -- assertions: upsertCustomAssertion / reportAssertionResult ------------------------
    def _write_assertion(self, urn: str, info: Json) -> Receipt:
        custom = info.get("customAssertion") or {}
        if (
            info.get("type") != "CUSTOM"
            or not custom.get("entity")
            or not self.supports("custom_assertion")
        ):  # before 1.7 the SDK's mutation is not valid: the aspect itself, on every 1.x
            return self._upsert(urn, "assertionInfo", info)
        logic = str(custom.get("logic") or "")
        if info.get("customProperties"):  # the mutation keeps no customProperties
            carried = json.dumps(info["customProperties"], sort_keys=True)
            logic = f"{logic}\n{PROPERTIES_PREFIX}{carried}"
        # Dataset-level, the column named in the logic: OSS rejects column-level run events.
        self._graph.upsert_custom_assertion(
            urn=urn,
            entity_urn=custom["entity"],
            type=str(custom["type"]),
            description=str(info.get("description") or custom["type"]),
            platform_urn=ASSERTION_PLATFORM,
            logic=logic,
        )
        back = self.get_aspects([urn], ["assertionInfo"]).get(urn, {}).get("assertionInfo") or {}
        if (back.get("customAssertion") or {}).get("type") != custom["type"]:
            return Receipt(urn, "assertionInfo", False, "assertion upserted but did not read back")
        return Receipt(
            urn, "assertionInfo", True, "assertion upserted in DataHub GMS and read back"
        )

    def _write_run_event(self, urn: str, event: Json) -> Receipt:
        result = event.get("result") or {}
        native = result.get("nativeResults") or {}
        if self.supports("assertion_result"):
            self._graph.report_assertion_result(
                urn=urn,
                timestamp_millis=int(event["timestampMillis"]),
                type=result["type"],
                properties=[{"key": str(k), "value": str(v)} for k, v in native.items()],
            )
            how = "reported"
        else:  # before 1.6 the SDK's mutation is not valid: the timeseries aspect itself
            self._graph.emit_mcp(build_mcp(urn, "assertionRunEvent", event))
            how = "written as an assertionRunEvent"
        return self._run_event_read_back(urn, int(event["timestampMillis"]), how)

    def _run_event_read_back(self, urn: str, stamp: int, how: str) -> Receipt:
        """Run events are indexed asynchronously (DataHub's own smoke test waits before reading
        them): ask again within a bounded wait, and say how long it took."""
        started = time.monotonic()
        for wait in self.read_back_waits:
            time.sleep(wait)
            events = run_events(self._gql(RUN_EVENTS, {"urns": [urn], "limit": 1, "start": None}))
            if any(int(e["timestampMillis"]) == stamp for e in events):
                took = time.monotonic() - started
                return Receipt(
                    urn, "assertionRunEvent", True, f"result {how}, read back after {took:.1f} s"
                )
        return Receipt(
            urn,
            "assertionRunEvent",
            False,
            f"result {how} but not read back within {sum(self.read_back_waits):.1f} s: DataHub "
            "indexes run events asynchronously, so it may still appear",
        )

    # -- structured properties: patches of the properties that changed --------------------
    def _number_typed(self, props: Sequence[str]) -> set[str]:
        found = self.get_aspects(list(props), ["propertyDefinition"])
        return {
            p
            for p, a in found.items()
            if str((a.get("propertyDefinition") or {}).get("valueType", "")).endswith("number")
        }

    def _write_structured(self, urn: str, value: Json) -> Receipt:
        from datahub.specific.dataset import DatasetPatchBuilder

        current = property_values(
            self.get_aspects([urn], ["structuredProperties"])
            .get(urn, {})
            .get("structuredProperties")
        )
        want = property_values(value)
        numbers = self._number_typed([p for p in want if want[p] != current.get(p)])
        builder = DatasetPatchBuilder(urn)
        changed = 0
        for prop, values in want.items():
            if values == current.get(prop):
                continue
            set_property_patch(builder, prop, [str(v) for v in values], numbers)
            changed += 1
        for prop in current.keys() - want.keys():
            builder.remove_structured_property(prop)
            changed += 1
        if not changed:
            return Receipt(urn, "structuredProperties", True, "already as wanted in DataHub GMS")
        for mcp in builder.build():  # only the changed properties travel; the rest stay
            self._graph.emit_mcp(mcp)
        back = property_values(
            self.get_aspects([urn], ["structuredProperties"])
            .get(urn, {})
            .get("structuredProperties")
        )
        ok = all(
            shown(p, back.get(p, []), numbers) == shown(p, vals, numbers)
            for p, vals in want.items()
        )
        ok = ok and not back.keys() & (current.keys() - want.keys())
        if not ok:
            return Receipt(urn, "structuredProperties", False, "patched but did not read back")
        return Receipt(
            urn, "structuredProperties", True, f"{changed} propert(ies) patched and read back"
        )

    # -- column tags: patches of the tags added to a field ----------------------------------
    def _write_field_tags(self, urn: str, value: Json) -> Receipt:
        """Tags added to columns go as field patches; any other change to the aspect is an
        upsert of the whole aspect, as before."""
        from datahub.metadata.schema_classes import TagAssociationClass
        from datahub.specific.dataset import DatasetPatchBuilder

        def rest(aspect: Json | None) -> list[Json]:
            return [
                {k: v for k, v in f.items() if k != "globalTags"}
                for f in (aspect or {}).get("editableSchemaFieldInfo") or []
                if set(f) - {"fieldPath", "globalTags"}
            ]

        current = (
            self.get_aspects([urn], ["editableSchemaMetadata"])
            .get(urn, {})
            .get("editableSchemaMetadata")
        )
        have, want = field_tags(current), field_tags(value)
        removed = any(have.get(f, set()) - want.get(f, set()) for f in have)
        if removed or rest(current) != rest(value):
            return self._upsert(urn, "editableSchemaMetadata", value)
        builder = DatasetPatchBuilder(urn)
        added = 0
        for field_path, wanted in want.items():
            for tag in sorted(wanted - have.get(field_path, set())):
                builder.for_field(field_path).add_tag(TagAssociationClass(tag))
                added += 1
        if not added:
            return Receipt(urn, "editableSchemaMetadata", True, "already tagged in DataHub GMS")
        for mcp in builder.build():
            self._graph.emit_mcp(mcp)
        back = field_tags(
            self.get_aspects([urn], ["editableSchemaMetadata"])
            .get(urn, {})
            .get("editableSchemaMetadata")
        )
        if any(not wanted <= back.get(f, set()) for f, wanted in want.items()):
            return Receipt(urn, "editableSchemaMetadata", False, "patched but did not read back")
        return Receipt(urn, "editableSchemaMetadata", True, f"{added} column tag(s) patched")

    # -- intended changes: the SDK's PATCH of only the change --------------------------------
    def apply_change(self, urn: str, change: Change) -> Receipt:
        """Apply one intended change as a PATCH, so other people's values are never touched."""
        from datahub.configuration.common import GraphError

        try:
            return self._patch(urn, change)
        except (GraphError, OSError) as exc:
            return Receipt(
                urn, change.kind, False, f"DataHub GMS refused the patch: {first_line(exc)}"
            )

    def _patch(self, urn: str, change: Change) -> Receipt:
        from datahub.specific.aspect_helpers.institutional_memory import (
            HasInstitutionalMemoryPatch,
        )
        from datahub.specific.dataset import DatasetPatchBuilder

        class Builder(DatasetPatchBuilder, HasInstitutionalMemoryPatch):
            """The SDK's dataset patches plus its institutional-memory patch (keyed by URL)."""

        writer = WRITERS[change.kind]
        numbers = (
            self._number_typed(change.values[:1])
            if change.kind == "set_structured_property"
            else set()
        )
        builder = Builder(urn)
        writer.patch(builder, change.values, numbers)
        for mcp in builder.build():  # one Rest.li ingestProposal per patch
            self._graph.emit_mcp(mcp)
        back = changes.current(self, urn, writer.aspect)
        if back is None or not writer.reads_back(change.values, back, numbers):
            return Receipt(
                urn, writer.aspect, False, "GMS accepted the patch but it did not read back"
            )
        return Receipt(urn, writer.aspect, True, "patched in DataHub GMS and read back")

    def delete_aspect(self, urn: str, aspect: str) -> Receipt:
        return Receipt(
            urn, aspect, False, "the gms backend does not remove aspects; remove it by hand"
        )
