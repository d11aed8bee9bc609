"""Incidents on a GMS: raised with ``raiseIncident``, moved with ``updateIncidentStatus``, and
linked to the assertion whose failure opened them in ``incidentInfo.source``, where every 1.x
keeps it (``raiseIncident`` itself stores source MANUAL whatever it is sent:
RaiseIncidentResolver.mapIncidentInfo). Each is reported only once it reads back."""

from __future__ import annotations

from upstream_dagster.datahub.gms.client import PAGE
from upstream_dagster.datahub.gms.conditional import ConditionalWrites
from upstream_dagster.datahub.graphql_ops import (
    FIND_INCIDENTS,
    RAISE_INCIDENT,
    UPDATE_INCIDENT_STATUS,
)
from upstream_dagster.datahub.model import Json, Receipt

# incidentInfo.priority (0 = most urgent) -> GraphQL IncidentPriority
PRIORITY = {0: "CRITICAL", 1: "HIGH", 2: "MEDIUM", 3: "LOW"}
INCIDENT_KEY = "Upstream incident key: "


class IncidentWrites(ConditionalWrites):
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
        source = info.get("source") or {}
        if source.get("sourceUrn"):
            self._link(urn, source)
            did += f", linked to {source['sourceUrn']}"
        # read the aspect itself: exact on every 1.x, where the GraphQL incidentStatus field
        # exists only from 1.3 and the source's URN is not in GraphQL at all
        back = self.get_aspects([urn], ["incidentInfo"]).get(urn, {}).get("incidentInfo") or {}
        got = back.get("status") or {}
        linked = not source.get("sourceUrn") or back.get("source") == source
        if back.get("type") != info["type"] or got.get("state") != status["state"] or not linked:
            return Receipt(urn, "incidentInfo", False, f"incident {did} but did not read back")
        return Receipt(urn, "incidentInfo", True, f"incident {did} in DataHub GMS and read back")

    def _link(self, urn: str, source: Json) -> None:
        """The failed assertion set as the incident's source, by a conditional write of the
        aspect the server holds (every 1.x keeps incidentInfo.source as written)."""

        def merge(current: Json | None) -> Json | None:
            if current is None or current.get("source") == source:
                return None
            return {**current, "source": dict(source)}

        self.conditional(urn, "incidentInfo", merge)
