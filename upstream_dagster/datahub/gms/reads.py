"""What the `gms` backend reads, and the requests each read costs."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from urllib.parse import quote

from upstream_dagster.datahub import edges as edge_parse
from upstream_dagster.datahub import timeline
from upstream_dagster.datahub.gms.client import GmsClient
from upstream_dagster.datahub.graphql_ops import BATCH, LINEAGE, RUN_EVENTS, SEARCH, chunks
from upstream_dagster.datahub.model import (
    Answer,
    AspectVersion,
    AssertionRun,
    ChangeEvent,
    History,
    Json,
    Lineage,
    LineageEdge,
    SearchQuery,
    Shape,
    Transaction,
)
from upstream_dagster.datahub.timeline import ALL_CATEGORIES
from upstream_dagster.spec.urns import entity_type, name_matches

ENTITY_TYPES = {
    "dataset": "DATASET",
    "dashboard": "DASHBOARD",
    "chart": "CHART",
    "assertion": "ASSERTION",
    "incident": "INCIDENT",
    "dataJob": "DATA_JOB",
    "dataProcessInstance": "DATA_PROCESS_INSTANCE",
}
# Timeseries aspects: a GMS keeps their values by time, not as versions.
TIMESERIES = {"datasetProfile", "operation", "datasetUsageStatistics"}
TIMESERIES_LIMIT = 100
HISTORY_LIMIT = 50  # earlier versions of one aspect read, one request each
NOT_AS_OF = (
    "gms lineage as of a past instant is not kept by GMS; the latest lineage aspects were read"
)


class GmsReads(GmsClient):
    # -- aspects --------------------------------------------------------------------------
    def get_aspects(
        self, urns: Sequence[str], aspects: Sequence[str], shape: Shape | None = None
    ) -> dict[str, dict[str, Json]]:
        out: dict[str, dict[str, Json]] = {}
        by_type: dict[str, list[str]] = defaultdict(list)
        for urn in dict.fromkeys(urns):
            by_type[entity_type(urn)].append(urn)
        for kind, group in by_type.items():
            for chunk in chunks(group, BATCH):
                # the server reads each aspect to return as a key of its own; an entry naming
                # none gets every aspect of the entity (EntityController.toEntityVersionRequest)
                body: list[Json] = [{"urn": u, **{a: {} for a in aspects}} for u in chunk]
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
                            kept = shape(name, value) if shape else value
                            out.setdefault(item["urn"], {})[name] = kept
        return out

    def aspect_history(self, urn: str, aspect: str) -> History:
        """Versions of an aspect, oldest first. A timeseries aspect (a profile, an operation)
        is one request for its latest values, each stamped with its own time; a versioned one
        is read version by version (GMS has no batched version read), times unknown: versions
        1..N hold the earlier values, oldest first, and version 0 the current one."""
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
            return Answer(
                tuple(AspectVersion(i + 1, ts, obj) for i, (ts, obj) in enumerate(stamped))
            )
        versions: list[AspectVersion] = []
        for version in range(1, HISTORY_LIMIT + 1):
            value = self._graph.get_aspect(urn, ASPECT_MAP[aspect], version=version)
            if value is None:
                break
            versions.append(AspectVersion(version, 0, value.to_obj()))
        latest = self._graph.get_aspect(urn, ASPECT_MAP[aspect], version=0)
        if latest is not None:
            versions.append(AspectVersion(len(versions) + 1, 0, latest.to_obj()))
        return Answer(
            tuple(versions), "gms aspect history is read version by version; times unknown"
        )

    def histories(self, urn: str, aspects: Sequence[str]) -> dict[str, list[AspectVersion]]:
        """What a server keeps with times, for one node: its profiles (a timeseries) and the
        current value of the other aspects asked for; its schema changes come from the timeline,
        not from reading schema versions one request at a time."""
        timed = [a for a in aspects if a in TIMESERIES]
        rest = [a for a in aspects if a not in TIMESERIES and a != "schemaMetadata"]
        found = self.get_aspects([urn], rest).get(urn, {}) if rest else {}
        out = {a: [AspectVersion(0, 0, found[a])] for a in rest if found.get(a)}
        for aspect in timed:
            out[aspect] = list(self.aspect_history(urn, aspect))
        return out

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
    def lineage_edges(self, as_of_ms: int | None = None) -> Lineage:
        urns: list[str] = []
        for kind in ("dataset", "chart", "dashboard", "dataJob"):
            urns.extend(self.search(SearchQuery(entity_type=kind)))
        found = self.get_aspects(urns, edge_parse.LINEAGE_ASPECTS)
        edges = edge_parse.edges_from_rows(
            (u, a, v) for u, aspects in found.items() for a, v in aspects.items()
        )
        return Answer(tuple(edges), NOT_AS_OF if as_of_ms is not None else None)

    def lineage(self, urns: Sequence[str], direction: str, as_of_ms: int | None = None) -> Lineage:
        if direction == "upstream":
            found = self.get_aspects(urns, edge_parse.LINEAGE_ASPECTS)
            edges = edge_parse.edges_from_rows(
                (u, a, v) for u, aspects in found.items() for a, v in aspects.items()
            )
            return Answer(tuple(edges), NOT_AS_OF if as_of_ms is not None else None)
        if direction != "downstream":
            raise ValueError(f"direction must be 'upstream' or 'downstream', not {direction!r}")
        out: list[LineageEdge] = []
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
                out.append(LineageEdge(urn, result["entity"]["urn"], "scrollAcrossLineage"))
        return Answer(tuple(out))

    # -- timeline -------------------------------------------------------------------------
    def timeline(
        self,
        urn: str,
        categories: Sequence[str] = ALL_CATEGORIES,
        start_ms: int | None = None,
        end_ms: int | None = None,
    ) -> list[Transaction]:
        asked = dict.fromkeys(timeline.canonical(c) for c in categories)
        if not self.supports("ownership_category"):
            asked = dict.fromkeys("OWNER" if c == "OWNERSHIP" else c for c in asked)
        params: list[tuple[str, str]] = [("categories", c) for c in asked]
        # without a start the server looks back seven days only (TimelineServiceImpl); all
        # history is what Lite answers, so ask from the beginning
        params.append(("startTime", str(start_ms if start_ms is not None else 0)))
        if end_ms is not None:
            params.append(("endTime", str(end_ms)))
        response = self._graph._session.get(
            f"{self.url}/openapi/v2/timeline/v1/{quote(urn, safe='')}", params=params
        )
        response.raise_for_status()
        return [transaction(urn, t) for t in response.json()]

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
            # the server answers newest first; reversed, ties keep the order it received them
            for e in reversed(run_events(data)):
                if asserted_urns is not None and e.get("asserteeUrn") not in asserted_urns:
                    continue
                if since_ms is not None and int(e["timestampMillis"]) <= since_ms:
                    continue
                runs.append(assertion_run(e))
        # a stable sort: two runs sharing a time stamp never swap on a run id
        runs.sort(key=lambda r: (r.timestamp_ms, r.assertion_urn))
        if latest_only:
            latest = {r.assertion_urn: r for r in runs}
            return sorted(latest.values(), key=lambda r: (r.timestamp_ms, r.assertion_urn))
        return runs


def run_events(data: Json) -> list[Json]:
    """The run events of a RUN_EVENTS answer, every entity's."""
    return [
        e
        for entity in data.get("entities") or []
        for e in (((entity or {}).get("runEvents") or {}).get("runEvents") or [])
    ]


def assertion_run(e: Json) -> AssertionRun:
    result = e.get("result") or {}
    return AssertionRun(
        e["assertionUrn"],
        e.get("asserteeUrn", ""),
        int(e["timestampMillis"]),
        str(result.get("type", "ERROR")),
        str(e.get("runId", "")),
        tuple(sorted((kv["key"], str(kv["value"])) for kv in result.get("nativeResults") or [])),
    )


def transaction(urn: str, raw: Json) -> Transaction:
    events = tuple(
        ChangeEvent(
            entity_urn=str(e.get("entityUrn", urn)),
            category=timeline.canonical(str(e.get("category", ""))),
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
