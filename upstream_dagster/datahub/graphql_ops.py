"""Every GraphQL document Upstream sends to a DataHub GMS, in one place, and DataHub's limits.

A GMS refuses a query whose document is over its limits: complexity 2000 (each selected field
counts one, as graphql-java counts it), depth 50, and 15,000 parser tokens. Every document here
takes its lists (URNs, filters) as variables, so its size does not grow with a batch; a batch is
split into requests of at most ``BATCH`` items so that one response stays bounded too.
``measure`` computes the three figures for a document; a test holds every operation below the
limits and validates each against DataHub's published schema.

The two assertion mutations (``upsertCustomAssertion``, ``reportAssertionResult``) are sent by
acryl-datahub's own ``DataHubGraph`` methods; their documents are the SDK's and are checked by
the same test from the recorded exchanges.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

COMPLEXITY_LIMIT = 2000
DEPTH_LIMIT = 50
TOKEN_LIMIT = 15_000
BATCH = 100  # items (URNs) per request

T = TypeVar("T")

SEARCH = """query upstreamSearch($input: ScrollAcrossEntitiesInput!) {
  scrollAcrossEntities(input: $input) { nextScrollId count total
    searchResults { entity { urn type } } } }"""

LINEAGE = """query upstreamLineage($input: ScrollAcrossLineageInput!) {
  scrollAcrossLineage(input: $input) { nextScrollId count total
    searchResults { degree entity { urn type } } } }"""

RUN_EVENTS = """query upstreamAssertionRuns($urns: [String!]!, $limit: Int, $start: Long) {
  entities(urns: $urns) { urn ... on Assertion {
    runEvents(status: COMPLETE, limit: $limit, startTimeMillis: $start) { runEvents {
      timestampMillis runId asserteeUrn assertionUrn
      result { type nativeResults { key value } } } } } } }"""

RAISE_INCIDENT = """mutation upstreamRaiseIncident($input: RaiseIncidentInput!) {
  raiseIncident(input: $input) }"""

UPDATE_INCIDENT_STATUS = """mutation upstreamUpdateIncidentStatus(
  $urn: String!, $input: IncidentStatusInput!) {
  updateIncidentStatus(urn: $urn, input: $input) }"""

FIND_INCIDENTS = """query upstreamFindIncidents($urn: String!, $start: Int, $count: Int) {
  dataset(urn: $urn) { incidents(start: $start, count: $count) { total
    incidents { urn description } } } }"""

# What an assertion is called (its incident key names the check): description, properties, field.
ASSERTION_CHECK = """query upstreamAssertionCheck($urn: String!) {
  assertion(urn: $urn) { urn info { description customProperties { key value }
    customAssertion { type field { path } } } } }"""

# Who the request's token belongs to (MeResolver: the authenticated actor's corpUser).
WHOAMI = """query upstreamWhoAmI { me { corpUser { urn username } } }"""

# name -> document: every operation Upstream itself writes (the SDK's two are named below).
OPERATIONS: dict[str, str] = {
    "upstreamSearch": SEARCH,
    "upstreamLineage": LINEAGE,
    "upstreamAssertionRuns": RUN_EVENTS,
    "upstreamRaiseIncident": RAISE_INCIDENT,
    "upstreamUpdateIncidentStatus": UPDATE_INCIDENT_STATUS,
    "upstreamFindIncidents": FIND_INCIDENTS,
    "upstreamWhoAmI": WHOAMI,
    "upstreamAssertionCheck": ASSERTION_CHECK,
}
SDK_OPERATIONS = ("upsertCustomAssertion", "reportAssertionResult")


@dataclass(frozen=True)
class Cost:
    tokens: int
    complexity: int
    depth: int

    def within_limits(self) -> bool:
        return (
            self.tokens <= TOKEN_LIMIT
            and self.complexity <= COMPLEXITY_LIMIT
            and self.depth <= DEPTH_LIMIT
        )


def measure(document: str) -> Cost:
    """Parser tokens, field complexity and selection depth of one GraphQL document."""
    from graphql import Source, TokenKind, parse
    from graphql.language import FieldNode, InlineFragmentNode, Lexer, OperationDefinitionNode

    lexer = Lexer(Source(document))
    tokens = 0
    while lexer.advance().kind != TokenKind.EOF:
        tokens += 1

    def walk(node: object, depth: int) -> tuple[int, int]:
        fields, deepest = 0, depth
        selection_set = getattr(node, "selection_set", None)
        for child in selection_set.selections if selection_set else ():
            inner = depth + 1 if isinstance(child, FieldNode) else depth
            count, reached = walk(child, inner)
            fields += count + (1 if isinstance(child, FieldNode) else 0)
            deepest = max(deepest, reached)
            assert isinstance(child, FieldNode | InlineFragmentNode), child
        return fields, deepest

    complexity, depth = 0, 0
    for definition in parse(document).definitions:
        if isinstance(definition, OperationDefinitionNode):
            c, d = walk(definition, 0)
            complexity, depth = complexity + c, max(depth, d)
    return Cost(tokens, complexity, depth)


def chunks(items: Sequence[T], size: int = BATCH) -> Iterator[Sequence[T]]:
    """A batch split into requests of at most ``size`` items."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
