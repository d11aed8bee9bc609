"""The `gms` backend: a real DataHub over acryl-datahub's `DataHubGraph`.

Aspects come in batches from OpenAPI v3 ``batchGet``; search pages through GraphQL
``scrollAcrossEntities``; downstream lineage through ``scrollAcrossLineage``; the timeline from
``/openapi/v2/timeline/v1``. Every HTTP request counts as one DataHub call. Where GMS cannot
answer exactly what Lite answers (lineage as of a past instant), the backend says so in
``last_fallback`` and the read path logs it.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import quote

from upstream_dagster.datahub import edges as edge_parse
from upstream_dagster.datahub.graphql_ops import (
    BATCH,
    FIND_INCIDENTS,
    LINEAGE,
    RAISE_INCIDENT,
    READ_INCIDENT,
    RUN_EVENTS,
    SEARCH,
    UPDATE_INCIDENT_STATUS,
    chunks,
)
from upstream_dagster.datahub.model import (
    AspectVersion,
    AssertionRun,
    CallCounter,
    ChangeEvent,
    Json,
    LineageEdge,
    Receipt,
    SearchQuery,
    Transaction,
)
from upstream_dagster.datahub.timeline import ALL_CATEGORIES
from upstream_dagster.errors import DataHubUnavailable
from upstream_dagster.spec.urns import name_matches

log = logging.getLogger(__name__)
PAGE = 1000  # results per GraphQL scroll page
ENTITY_TYPES = {
    "dataset": "DATASET",
    "dashboard": "DASHBOARD",
    "chart": "CHART",
    "assertion": "ASSERTION",
    "incident": "INCIDENT",
    "dataJob": "DATA_JOB",
    "dataProcessInstance": "DATA_PROCESS_INSTANCE",
}
# incidentInfo.priority (0 = most urgent) -> GraphQL IncidentPriority
PRIORITY = {0: "CRITICAL", 1: "HIGH", 2: "MEDIUM", 3: "LOW"}
INCIDENT_KEY = "Upstream incident key: "
ASSERTION_PLATFORM = "urn:li:dataPlatform:upstream"


def _entity_type(urn: str) -> str:
    return urn.split(":")[2]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else type(exc).__name__


def _leaves(value: Any) -> set[str]:
    """Every string inside an aspect value (to check that a patched value reads back)."""
    if isinstance(value, dict):
        return set().union(*(_leaves(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_leaves(v) for v in value))
    return {value} if isinstance(value, str) else set()


def _plain(value: Json) -> str | float:
    """One structured property value as the SDK's patch takes it."""
    if "double" in value:
        return float(value["double"])
    return str(value.get("string", next(iter(value.values()), "")))


# Timeseries aspects: a GMS keeps their values by time, not as versions.
TIMESERIES = {"datasetProfile", "operation", "datasetUsageStatistics"}
TIMESERIES_LIMIT = 100


def _property_values(aspect: Json | None) -> dict[str, list[str | float]]:
    """structuredProperties as {property URN: its values}."""
    return {
        str(p["propertyUrn"]): [_plain(v) for v in p.get("values") or []]
        for p in (aspect or {}).get("properties") or []
    }


def _shown(prop: str, values: Sequence[str | float], numbers: set[str]) -> list[str]:
    """Values as comparable text: a number-typed property's 0.40 and 0.4 are the same."""
    return [str(float(v)) if prop in numbers else str(v) for v in values]


def _set_property(
    builder: Any, prop: str, values: Sequence[str | float], numbers: set[str]
) -> None:
    """Patch one property, typed by its definition (numbers travel as numbers)."""
    typed: list[str | float] = [float(v) for v in values] if prop in numbers else list(values)
    if not typed:
        builder.remove_structured_property(prop)
    else:
        builder.set_structured_property(prop, typed if len(typed) != 1 else typed[0])


def _field_tags(aspect: Json | None) -> dict[str, set[str]]:
    """editableSchemaMetadata as {field path: its tags}."""
    return {
        str(f["fieldPath"]): {t["tag"] for t in (f.get("globalTags") or {}).get("tags", [])}
        for f in (aspect or {}).get("editableSchemaFieldInfo") or []
    }


def _reads_back(kind: str, values: Sequence[str], back: Json, numbers: set[str]) -> bool:
    """Whether the value a patch set is what DataHub now shows."""
    if kind == "set_structured_property":
        prop, *new = values
        shown = _property_values(back).get(prop, [])
        return _shown(prop, shown, numbers) == _shown(prop, new, numbers)
    if kind == "add_column_tag":
        field_path, tag = values
        return tag in _field_tags(back).get(field_path, set())
    return set(values) <= _leaves(back)


class GmsGraph:
    transport = "gms"

    def __init__(self, url: str, token: str | None = None, *, timeout_sec: float = 15) -> None:
        from upstream_dagster.datahub import _sdk

        _sdk.prepare()  # no telemetry, nothing written to the home folder
        from datahub.ingestion.graph.client import DatahubClientConfig, DataHubGraph

        self.url = url.rstrip("/")
        self.counter = CallCounter()
        self.last_fallback: str | None = None
        self._graph = DataHubGraph(
            DatahubClientConfig(
                server=self.url,
                token=token,
                timeout_sec=timeout_sec,
                retry_max_times=0,
                openapi_ingestion=False,
            )
        )
        try:
            self._graph.test_connection()
        except Exception as exc:  # noqa: BLE001 - the SDK raises many types for one cause
            raise DataHubUnavailable(
                f"cannot reach DataHub GMS at {self.url} ({_first_line(exc)})",
                "check that GMS is running and DATAHUB_GMS_URL points at it (for example "
                "http://localhost:8080), set DATAHUB_GMS_TOKEN if authentication is on, or "
                "unset DATAHUB_GMS_URL to use the embedded DataHub Lite",
            ) from exc
        self._graph._session.hooks["response"].append(self._count)

    def _count(self, response: Any, *args: Any, **kwargs: Any) -> Any:
        self.counter.add(response.request.method.lower())
        return response

    # -- HTTP helpers ---------------------------------------------------------------------
    def _gql(self, query: str, variables: Json) -> Json:
        result: Json = self._graph.execute_graphql(query, variables=variables)
        return result

    def _scroll(self, query: str, field: str, variables: Json) -> Iterator[Json]:
        scroll_id: str | None = None
        while True:
            payload = dict(variables["input"], scrollId=scroll_id, count=PAGE)
            page = self._gql(query, {"input": payload})[field]
            yield from page.get("searchResults") or []
            scroll_id = page.get("nextScrollId")
            if not scroll_id:
                return

    # -- aspects --------------------------------------------------------------------------
    def get_aspects(
        self, urns: Sequence[str], aspects: Sequence[str]
    ) -> dict[str, dict[str, Json]]:
        out: dict[str, dict[str, Json]] = {}
        by_type: dict[str, list[str]] = defaultdict(list)
        for urn in dict.fromkeys(urns):
            by_type[_entity_type(urn)].append(urn)
        for kind, group in by_type.items():
            for chunk in chunks(group, BATCH):
                body = [{"urn": u, "aspectNames": list(aspects)} for u in chunk]
                response = self._graph._session.post(
                    f"{self.url}/openapi/v3/entity/{kind.lower()}/batchGet",
                    params={"systemMetadata": "false"},
                    json=body,
                )
                response.raise_for_status()
                for item in response.json():
                    found = item.get("aspects") or item
                    for name in aspects:
                        if isinstance(found.get(name), dict):
                            value = found[name].get("value", found[name])
                            out.setdefault(item["urn"], {})[name] = value
        return out

    def aspect_history(self, urn: str, aspect: str) -> list[AspectVersion]:
        """Versions of an aspect, oldest first. A timeseries aspect (a profile, an operation)
        is one request for its latest values, each stamped with its own time; a versioned one
        is read version by version (GMS has no batched version read), times unknown."""
        from datahub.emitter.aspect import ASPECT_MAP

        if aspect in TIMESERIES:
            since = {"field": "timestampMillis", "values": ["0"], "condition": "GREATER_THAN"}
            values = self._graph.get_timeseries_values(
                urn, ASPECT_MAP[aspect], {"or": [{"and": [since]}]}, limit=TIMESERIES_LIMIT
            )
            stamped = sorted(
                ((int(v.to_obj().get("timestampMillis") or 0), v.to_obj()) for v in values),
                key=lambda tv: tv[0],
            )
            return [AspectVersion(i + 1, ts, obj) for i, (ts, obj) in enumerate(stamped)]
        self.last_fallback = "gms aspect history is read version by version; times unknown"
        versions: list[AspectVersion] = []
        for version in range(1, 51):
            value = self._graph.get_aspect(urn, ASPECT_MAP[aspect], version=version)
            if value is None:
                break
            versions.append(AspectVersion(version, 0, value.to_obj()))
        return versions

    # -- search ---------------------------------------------------------------------------
    def search(self, query: SearchQuery) -> list[str]:
        rules: list[Json] = []
        for field, values in (
            ("platform", [f"urn:li:dataPlatform:{p}" for p in query.platforms]),
            ("domains", query.domains),
            ("tags", query.tags),
            ("glossaryTerms", query.terms),
            ("owners", query.owners),
            ("urn", query.urns),
        ):
            if values:
                rules.append({"field": field, "values": list(values), "condition": "EQUAL"})
        payload: Json = {
            "types": [ENTITY_TYPES.get(query.entity_type, query.entity_type.upper())],
            "query": "*",
        }
        if rules:
            payload["orFilters"] = [{"and": rules}]
        urns = [
            r["entity"]["urn"]
            for r in self._scroll(SEARCH, "scrollAcrossEntities", {"input": payload})
        ]
        if query.names:
            urns = [u for u in urns if any(name_matches(u, n) for n in query.names)]
        return sorted(dict.fromkeys(urns))

    # -- lineage --------------------------------------------------------------------------
    def lineage_edges(self, as_of_ms: int | None = None) -> list[LineageEdge]:
        if as_of_ms is not None:
            self.last_fallback = (
                "gms lineage as of a past instant is not kept by GMS; the "
                "latest lineage aspects were read"
            )
        urns: list[str] = []
        for kind in ("dataset", "chart", "dashboard", "dataJob"):
            urns.extend(self.search(SearchQuery(entity_type=kind)))
        found = self.get_aspects(urns, edge_parse.LINEAGE_ASPECTS)
        return edge_parse.edges_from_rows(
            (u, a, v) for u, aspects in found.items() for a, v in aspects.items()
        )

    def lineage(
        self, urns: Sequence[str], direction: str, as_of_ms: int | None = None
    ) -> list[LineageEdge]:
        if direction == "upstream":
            if as_of_ms is not None:
                self.last_fallback = "gms upstream lineage as of a past instant: latest aspects"
            found = self.get_aspects(urns, edge_parse.LINEAGE_ASPECTS)
            return edge_parse.edges_from_rows(
                (u, a, v) for u, aspects in found.items() for a, v in aspects.items()
            )
        if direction != "downstream":
            raise ValueError(f"direction must be 'upstream' or 'downstream', not {direction!r}")
        edges: list[LineageEdge] = []
        for urn in urns:
            payload: Json = {
                "urn": urn,
                "direction": "DOWNSTREAM",
                "query": "*",
                "orFilters": [{"and": [{"field": "degree", "values": ["1"]}]}],
            }
            if as_of_ms is not None:
                payload["lineageFlags"] = {"endTimeMillis": as_of_ms}
            for result in self._scroll(LINEAGE, "scrollAcrossLineage", {"input": payload}):
                edges.append(LineageEdge(urn, result["entity"]["urn"], "scrollAcrossLineage"))
        return edges

    # -- timeline -------------------------------------------------------------------------
    def timeline(
        self,
        urn: str,
        categories: Sequence[str] = ALL_CATEGORIES,
        start_ms: int | None = None,
        end_ms: int | None = None,
    ) -> list[Transaction]:
        params: list[tuple[str, str]] = [("categories", c) for c in categories]
        if start_ms is not None:
            params.append(("startTime", str(start_ms)))
        if end_ms is not None:
            params.append(("endTime", str(end_ms)))
        response = self._graph._session.get(
            f"{self.url}/openapi/v2/timeline/v1/{quote(urn, safe='')}", params=params
        )
        response.raise_for_status()
        return [_transaction(urn, t) for t in response.json()]

    # -- assertions -----------------------------------------------------------------------
    def assertion_runs(
        self,
        asserted_urns: Sequence[str] | None = None,
        since_ms: int | None = None,
        latest_only: bool = True,
    ) -> list[AssertionRun]:
        assertions = self.search(SearchQuery(entity_type="assertion"))
        runs: list[AssertionRun] = []
        for chunk in chunks(assertions, BATCH):
            data = self._gql(
                RUN_EVENTS,
                {"urns": list(chunk), "limit": 1 if latest_only else 100, "start": since_ms},
            )
            for entity in data.get("entities") or []:
                for e in ((entity or {}).get("runEvents") or {}).get("runEvents") or []:
                    if asserted_urns is not None and e.get("asserteeUrn") not in asserted_urns:
                        continue
                    if since_ms is not None and int(e["timestampMillis"]) <= since_ms:
                        continue
                    result = e.get("result") or {}
                    runs.append(
                        AssertionRun(
                            e["assertionUrn"],
                            e.get("asserteeUrn", ""),
                            int(e["timestampMillis"]),
                            str(result.get("type", "ERROR")),
                            str(e.get("runId", "")),
                            tuple(
                                sorted(
                                    (kv["key"], str(kv["value"]))
                                    for kv in result.get("nativeResults") or []
                                )
                            ),
                        )
                    )
        runs.sort(key=lambda r: (r.timestamp_ms, r.assertion_urn, r.run_id))
        if latest_only:
            latest = {r.assertion_urn: r for r in runs}
            return sorted(latest.values(), key=lambda r: (r.timestamp_ms, r.assertion_urn))
        return runs

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

        try:
            if special is not None:
                return special(urn, value)
            return self._upsert(urn, aspect, value)
        except (KeyError, ValueError, TypeError) as exc:
            return Receipt(urn, aspect, False, f"not a valid {aspect} for GMS: {exc}")
        except (GraphError, OSError) as exc:  # refused or unreachable: nothing is reported written
            return Receipt(urn, aspect, False, f"DataHub GMS refused the write: {_first_line(exc)}")

    def _upsert(self, urn: str, aspect: str, value: Json) -> Receipt:
        from upstream_dagster.datahub.mcp import build_mcp

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
            raise_input: Json = {
                "type": info["type"],
                "title": info.get("title"),
                "description": f"{info.get('description', '')}\n\n{INCIDENT_KEY}{key}",
                "resourceUrns": resources,
                "startedAt": info.get("startedAt"),
                "source": {"type": (info.get("source") or {}).get("type", "MANUAL")},
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
        back = (self._gql(READ_INCIDENT, {"urn": urn}) or {}).get("entity") or {}
        got = back.get("incidentStatus") or {}
        if back.get("incidentType") != info["type"] or got.get("state") != status["state"]:
            return Receipt(urn, "incidentInfo", False, f"incident {did} but did not read back")
        return Receipt(urn, "incidentInfo", True, f"incident {did} in DataHub GMS and read back")

    # -- assertions: upsertCustomAssertion / reportAssertionResult ------------------------
    def _write_assertion(self, urn: str, info: Json) -> Receipt:
        from upstream_dagster.datahub.model import PROPERTIES_PREFIX

        custom = info.get("customAssertion") or {}
        if info.get("type") != "CUSTOM" or not custom.get("entity"):
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
        self._graph.report_assertion_result(
            urn=urn,
            timestamp_millis=int(event["timestampMillis"]),
            type=result["type"],
            properties=[{"key": str(k), "value": str(v)} for k, v in native.items()],
        )
        data = self._gql(RUN_EVENTS, {"urns": [urn], "limit": 1, "start": None})
        events = [
            e
            for entity in data.get("entities") or []
            for e in (((entity or {}).get("runEvents") or {}).get("runEvents") or [])
        ]
        if not any(int(e["timestampMillis"]) == int(event["timestampMillis"]) for e in events):
            return Receipt(urn, "assertionRunEvent", False, "result reported but not read back")
        return Receipt(urn, "assertionRunEvent", True, "result reported to DataHub GMS, read back")

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

        current = _property_values(
            self.get_aspects([urn], ["structuredProperties"])
            .get(urn, {})
            .get("structuredProperties")
        )
        want = _property_values(value)
        numbers = self._number_typed([p for p in want if want[p] != current.get(p)])
        builder = DatasetPatchBuilder(urn)
        changed = 0
        for prop, values in want.items():
            if values == current.get(prop):
                continue
            _set_property(builder, prop, values, numbers)
            changed += 1
        for prop in current.keys() - want.keys():
            builder.remove_structured_property(prop)
            changed += 1
        if not changed:
            return Receipt(urn, "structuredProperties", True, "already as wanted in DataHub GMS")
        for mcp in builder.build():  # only the changed properties travel; the rest stay
            self._graph.emit_mcp(mcp)
        back = _property_values(
            self.get_aspects([urn], ["structuredProperties"])
            .get(urn, {})
            .get("structuredProperties")
        )
        ok = all(
            _shown(p, back.get(p, []), numbers) == _shown(p, vals, numbers)
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
        have, want = _field_tags(current), _field_tags(value)
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
        back = _field_tags(
            self.get_aspects([urn], ["editableSchemaMetadata"])
            .get(urn, {})
            .get("editableSchemaMetadata")
        )
        if any(not wanted <= back.get(f, set()) for f, wanted in want.items()):
            return Receipt(urn, "editableSchemaMetadata", False, "patched but did not read back")
        return Receipt(urn, "editableSchemaMetadata", True, f"{added} column tag(s) patched")

    def patch_change(self, urn: str, kind: str, values: Sequence[str]) -> Receipt:
        """Apply one intended change as a PATCH, so other people's values are never touched."""
        from datahub.configuration.common import GraphError

        try:
            return self._patch_change(urn, kind, values)
        except (GraphError, OSError) as exc:
            return Receipt(urn, kind, False, f"DataHub GMS refused the patch: {_first_line(exc)}")

    def _patch_change(self, urn: str, kind: str, values: Sequence[str]) -> Receipt:
        from datahub.metadata.schema_classes import (
            AuditStampClass,
            DomainAssociationClass,
            GlossaryTermAssociationClass,
            InstitutionalMemoryMetadataClass,
            OwnerClass,
            OwnershipTypeClass,
            TagAssociationClass,
        )
        from datahub.specific.aspect_helpers.institutional_memory import (
            HasInstitutionalMemoryPatch,
        )
        from datahub.specific.dataset import DatasetPatchBuilder

        from upstream_dagster import clock
        from upstream_dagster.datahub.writers import ACTOR, WRITERS

        class Builder(DatasetPatchBuilder, HasInstitutionalMemoryPatch):
            """The SDK's dataset patches plus its institutional-memory patch (keyed by URL)."""

        builder = Builder(urn)
        aspect = WRITERS[kind][0]
        numbers: set[str] = set()
        if kind == "set_structured_property":
            prop, *new = values
            numbers = self._number_typed([prop])
            _set_property(builder, prop, new, numbers)
        elif kind == "add_memory":
            url, description = values
            builder.add_institutional_memory(
                InstitutionalMemoryMetadataClass(
                    url=url,
                    description=description,
                    createStamp=AuditStampClass(clock.now_ms(), ACTOR),
                )
            )
        elif kind == "add_column_tag":
            field_path, tag = values
            builder.for_field(field_path).add_tag(TagAssociationClass(tag))
        else:  # owners, a description, terms, a domain, tags: each value on its own
            for value in values:
                if kind == "add_owner":
                    builder.add_owner(OwnerClass(value, OwnershipTypeClass.DATAOWNER))
                elif kind == "set_description":
                    builder.set_description(value, editable=True)
                elif kind == "add_term":
                    builder.add_term(GlossaryTermAssociationClass(value))
                elif kind == "set_domain":
                    builder.add_domain(DomainAssociationClass(domain=value))
                elif kind == "add_tag":
                    builder.add_tag(TagAssociationClass(value))
        for mcp in builder.build():  # one Rest.li ingestProposal per patch
            self._graph.emit_mcp(mcp)
        back = self.get_aspects([urn], [aspect]).get(urn, {}).get(aspect)
        if back is None or not _reads_back(kind, values, back, numbers):
            return Receipt(urn, aspect, False, "GMS accepted the patch but it did not read back")
        return Receipt(urn, aspect, True, "patched in DataHub GMS and read back")

    def close(self) -> None:
        self._graph.close()


def _transaction(urn: str, raw: Json) -> Transaction:
    events = tuple(
        ChangeEvent(
            entity_urn=str(e.get("entityUrn", urn)),
            category=str(e.get("category", "")),
            operation=str(e.get("operation", "")),
            modifier=e.get("modifier"),
            parameters=dict(e.get("parameters") or {}),
            description=str(e.get("description", "")),
            timestamp_ms=int((e.get("auditStamp") or {}).get("time") or raw.get("timestamp") or 0),
        )
        for e in raw.get("changeEvents") or []
    )
    return Transaction(
        timestamp_ms=int(raw.get("timestamp", 0)),
        sem_ver=str(raw.get("semVer", "")),
        sem_ver_change=str(raw.get("semVerChange", "NONE")),
        version_stamp=str(raw.get("versionStamp", "")),
        events=events,
        actor=str(raw.get("actor", "")),
    )
