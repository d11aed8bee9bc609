"""What each DataHub server version supports, read from DataHub's schema at each release tag
(1.0 to 1.7). A server older than an operation gets a path that works on every 1.x."""

from __future__ import annotations

import re

Version = tuple[int, int, int]
OLDEST: Version = (1, 0, 0)  # what a server that does not say its version is taken to be
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
    # the Document entity (documentInfo; createDocument in documents.graphql)
    "document": (1, 7, 0),
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


def shown(version: Version | None) -> str:
    return ".".join(map(str, version)) if version else "unknown (taken as 1.0)"
