"""What the DataHub Action reads from DataHub to key an incident as the polling sensor keys it:
the failing run's own time, and the check's name, each in the form the connected release
answers. A read that fails is logged and answers nothing: the Action then keys the incident
without it, and the sensor may open the same failure once more under its own key.

The check's name comes from the assertion's ``customProperties`` (a dbt test's unique id, an
Upstream monitor's name), which GraphQL's AssertionInfo has only from 1.7 (PR 18750); on 1.0-1.6
a query selecting it is refused whole. There the assertionInfo aspect itself is read (Rest.li
``GET /aspects``, served by every 1.x), the aspect the sensor names the check from, so both name
it the same way on every release."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from upstream_dagster.datahub.gms import versions
from upstream_dagster.datahub.gms.reads import run_events
from upstream_dagster.datahub.graphql_ops import ASSERTION_CHECK, RUN_EVENTS
from upstream_dagster.datahub.incidents import check_from_graphql, check_name

log = logging.getLogger(__name__)
# (assertion URN, run id) -> the run event's own timestampMillis, or None when not found
RunStamp = Callable[[str, str], int | None]
# assertion URN -> the check's short name, as the sensor names it ("" when DataHub did not say)
CheckName = Callable[[str], str]


def check_of_from(execute: Callable[..., dict[str, Any]]) -> CheckName:
    """A `CheckName` over a GraphQL executor of a 1.7 server: the assertion's info with its
    customProperties, named as the sensor names it."""

    def check(assertion: str) -> str:
        try:
            data = execute(ASSERTION_CHECK, variables={"urn": assertion})
        except Exception as exc:  # noqa: BLE001 - the framework's client raises many types
            log.warning("could not read the assertion %s: %s", assertion, exc)
            return ""
        return check_from_graphql(((data or {}).get("assertion") or {}).get("info") or {})

    return check


def check_of_aspect(get_aspect: Callable[..., Any]) -> CheckName:
    """A `CheckName` over ``DataHubGraph.get_aspect`` (every 1.x): the assertionInfo aspect,
    named exactly as the sensor names it from the same aspect."""

    def check(assertion: str) -> str:
        from datahub.metadata.schema_classes import AssertionInfoClass

        try:
            info = get_aspect(assertion, AssertionInfoClass)
        except Exception as exc:  # noqa: BLE001 - the framework's client raises many types
            log.warning("could not read the assertion %s: %s", assertion, exc)
            return ""
        return check_name(info.to_obj()) if info is not None else ""

    return check


def check_of_graph(graph: Any) -> CheckName:
    """The `CheckName` form for the release the framework's DataHubGraph is connected to (its
    version read once from ``/config``)."""
    config = getattr(graph, "server_config", None)
    version = versions.parse(getattr(config, "service_version", None))
    if versions.sends_graphql(version, "upstreamAssertionCheck"):
        return check_of_from(graph.execute_graphql)
    return check_of_aspect(graph.get_aspect)


def run_stamp_from(execute: Callable[..., dict[str, Any]]) -> RunStamp:
    """A `RunStamp` over a GraphQL executor (the Actions framework's DataHub connection): the
    assertion's recent run events, the one with the run id (else the latest)."""

    def stamp(assertion: str, run_id: str) -> int | None:
        try:
            data = execute(RUN_EVENTS, variables={"urns": [assertion], "limit": 10, "start": None})
        except Exception as exc:  # noqa: BLE001 - the framework's client raises many types
            log.warning("could not read the run events of %s: %s", assertion, exc)
            return None
        events = run_events(data)
        match = [e for e in events if e.get("runId") == run_id] or events
        return max((int(e["timestampMillis"]) for e in match), default=None)

    return stamp
