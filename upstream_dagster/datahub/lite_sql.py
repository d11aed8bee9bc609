"""The SQL Upstream runs over DataHub Lite's own tables: their names, and the one search
statement (every selector of a `SearchQuery` as a filter in SQLite's JSON functions)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from upstream_dagster.datahub.model import SearchQuery

TABLE = "metadata_aspect_v2"
EDGES = "metadata_edge_v2"  # Lite's browse tree: parent, relationship, child
# The aspects Lite's browse tree is made of: where an entity sits (container, subTypes,
# dataPlatformInstance) and the names it shows (the rest). Lite rebuilds the tree from every
# aspect in the store when a writer closes; its edits as each aspect is written are not always
# the same (a name written empty keeps the old name's edge). A write of any other aspect to an
# entity the store already holds leaves the tree as the rebuild would make it, so closing after
# only such writes needs no rebuild (tests/test_lite_contract.py, evals/lite-tree-*/).
BROWSE_ASPECTS = frozenset(
    {
        "container",
        "subTypes",
        "dataPlatformInstance",
        "datasetProperties",
        "containerProperties",
        "chartInfo",
        "dashboardInfo",
        "tagProperties",
    }
)
SEEN = f"SELECT 1 FROM {TABLE} WHERE urn = ? LIMIT 1"  # is the entity in the store yet
# The identifying key of each list item that search filters on.
_KEYS = {"domains": "urn", "globalTags": "tag", "glossaryTerms": "urn", "ownership": "owner"}


def marks(values: Sequence[Any]) -> str:
    return ",".join("?" * len(values))


def search_sql(query: SearchQuery) -> tuple[str, list[Any]]:
    """One statement returning the URNs that match ``query``, soft-deleted entities left out;
    ``upstream_name_match`` is the name glob the Lite connection registers."""
    # One row per entity first, so the filters (and the name glob, a Python function) run
    # once per entity rather than once per aspect row.
    entities = f"(SELECT DISTINCT urn FROM {TABLE} WHERE version = 0 AND urn LIKE ?) a"
    where = ["1 = 1"]
    params: list[Any] = [f"urn:li:{query.entity_type}:%"]

    def exists(aspect: str, path: str, values: Sequence[str]) -> None:
        where.append(
            f"EXISTS (SELECT 1 FROM {TABLE} b, json_each(b.metadata, '{path}') j WHERE "
            f"b.urn = a.urn AND b.version = 0 AND b.aspect_name = ? AND "
            f"(CASE WHEN j.type = 'object' THEN json_extract(j.value, '$.{_KEYS[aspect]}') "
            f"ELSE j.value END) IN ({marks(values)}))"
        )
        params.extend([aspect, *values])

    if query.platforms:
        where.append("(" + " OR ".join(["a.urn LIKE ?"] * len(query.platforms)) + ")")
        params.extend(
            f"urn:li:{query.entity_type}:(urn:li:dataPlatform:{p},%" for p in query.platforms
        )
    if query.names:
        where.append("(" + " OR ".join(["upstream_name_match(a.urn, ?)"] * len(query.names)) + ")")
        params.extend(query.names)
    if query.urns:
        where.append(f"a.urn IN ({marks(query.urns)})")
        params.extend(query.urns)
    if query.domains:
        exists("domains", "$.domains", query.domains)
    if query.tags:
        exists("globalTags", "$.tags", query.tags)
    if query.terms:
        exists("glossaryTerms", "$.terms", query.terms)
    if query.owners:
        exists("ownership", "$.owners", query.owners)
    where.append(
        f"NOT EXISTS (SELECT 1 FROM {TABLE} s WHERE s.urn = a.urn AND s.version = 0 "
        "AND s.aspect_name = 'status' AND json_extract(s.metadata, '$.removed') = 1)"
    )
    sql = f"SELECT a.urn FROM {entities} WHERE {' AND '.join(where)} ORDER BY a.urn"
    return sql, params
