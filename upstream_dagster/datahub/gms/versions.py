"""What each DataHub server version supports, read from DataHub's schema at each release (1.0 to
1.7, ``datahub-schema/versions/``) and from its source (``datahub-schema/SOURCE.md`` names the
commit behind each gate). The one place a version decides anything: the write path
(`routes`), the GraphQL documents each release is sent, and the compatibility table. A server
older than a feature gets a path that works on every 1.x."""

from __future__ import annotations

import re

Version = tuple[int, int, int]
OLDEST: Version = (1, 0, 0)  # what a server that does not say its version is taken to be
# The releases whose schema is kept, and those the compatibility table shows.
RELEASES: tuple[Version, ...] = tuple((1, minor, 0) for minor in range(8))
TABLE: tuple[Version, ...] = ((1, 0, 0), (1, 3, 0), (1, 4, 0), (1, 6, 0), (1, 7, 0))
# feature -> the first release that has it as acryl-datahub 1.7.0.17 uses it
FIRST: dict[str, Version] = {
    # upsertCustomAssertion with AssertionStdParametersInput, fieldPaths, scope, ... (PR 18748)
    "custom_assertion": (1, 7, 0),
    # reportAssertionResult(... severity: AssertionResultSeverity) (PR 17118)
    "assertion_result": (1, 6, 0),
    # Incident.incidentStatus, read back after raising (PR 14671)
    "incident_status": (1, 3, 0),
    # the timeline category OWNERSHIP; OWNER stays an accepted alias (PR 16929)
    "ownership_category": (1, 6, 0),
    # the Document entity: documentInfo, createDocument (711ac49c0a, 2025-11-19)
    "document": (1, 4, 0),
    # A JSON patch whose body is an object with arrayPrimaryKeys, as the SDK sends owners,
    # terms, tags, structured properties and links: read from d49b7841cb (2025-04-10, PR
    # 13165), and an existing entry without one of the keys (an ingested owner without
    # typeUrn) tolerated from 650cff172d (2025-05-26, PR 13618). 1.3 is the first release
    # proven to hold both (it has PR 14671 of 2025-09-10); 1.1 and 1.2 are not proven either
    # way, so they get the read-modify-write every release takes.
    "keyed_patch": (1, 3, 0),
    # the SDK's set_domain patches domainAssociations (c3b65c7b14, 2026-06-12, PR 17884)
    "domain_patch": (1, 7, 0),
    # EditableDatasetPropertiesTemplate: an editable description by patch (19d3e2c00c)
    "description_patch": (1, 4, 0),
    # AssertionInfo.customProperties in GraphQL (18e23e49d2, 2026-08-04, PR 18750)
    "assertion_properties": (1, 7, 0),
}
# feature -> what it is and where DataHub's source proves it (the compatibility table prints it)
EVIDENCE: dict[str, str] = {
    "custom_assertion": "upsertCustomAssertion as the SDK sends it (PR 18748)",
    "assertion_result": "reportAssertionResult with severity (PR 17118)",
    "incident_status": "GraphQL Incident.incidentStatus (PR 14671)",
    "ownership_category": "timeline category OWNERSHIP (PR 16929)",
    "document": "the Document entity (711ac49c0a)",
    "keyed_patch": "JSON patch object with arrayPrimaryKeys (d49b7841cb, PR 13165) and "
    "tolerant of entries missing a key (650cff172d, PR 13618); 1.1 and 1.2 not proven",
    "domain_patch": "Domains.domainAssociations (c3b65c7b14, PR 17884)",
    "description_patch": "EditableDatasetPropertiesTemplate (19d3e2c00c)",
    "assertion_properties": "GraphQL AssertionInfo.customProperties (PR 18750)",
}
# GraphQL operation -> the feature a server needs before it is sent that document (the rest
# go to every 1.x); the tests validate each document against every release it is sent to.
GRAPHQL_FROM: dict[str, str] = {
    "upsertCustomAssertion": "custom_assertion",
    "reportAssertionResult": "assertion_result",
    "upstreamAssertionCheck": "assertion_properties",
}


def parse(text: str | None) -> Version | None:
    """``v1.7.0``, ``1.6.1rc2``, ``v1.3.0.4`` -> (1, 7, 0) ...; None when it says no version."""
    match = re.match(r"^v?(\d+)\.(\d+)\.(\d+)", (text or "").strip())
    if not match:
        return None
    major, minor, patch = (int(g) for g in match.groups())
    return (major, minor, patch)


def supports(version: Version | None, feature: str) -> bool:
    return (version or OLDEST) >= FIRST[feature]


def sends_graphql(version: Version | None, operation: str) -> bool:
    """Whether a server of this version is ever sent the GraphQL operation."""
    feature = GRAPHQL_FROM.get(operation)
    return feature is None or supports(version, feature)


def shown(version: Version | None) -> str:
    return ".".join(map(str, version)) if version else "unknown (taken as 1.0)"
