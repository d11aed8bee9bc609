"""Tier selectors resolve through DataHub search, never through a list Upstream keeps.

A new `fct_*` model is in scope on the next run with no configuration change. A dataset belongs
to the first tier, in file order, whose selectors match it; a twin matched by either of its URNs
belongs to the asset named by the dbt entity.
"""

from __future__ import annotations

from upstream_dagster.conformance.context import MetadataContext
from upstream_dagster.conformance.tiers import Scope, SelectorHit
from upstream_dagster.datahub.model import SearchQuery
from upstream_dagster.datahub.protocol import MetadataGraph
from upstream_dagster.spec.models import EstateSpec, Selector
from upstream_dagster.spec.urns import to_urns


def selector_query(selector: Selector) -> SearchQuery:
    return SearchQuery(
        entity_type="dataset",
        platforms=tuple(selector.platforms),
        names=tuple(selector.names),
        domains=to_urns("domains", selector.domains),
        tags=to_urns("tags", selector.tags),
        terms=to_urns("terms", selector.terms),
        owners=to_urns("owners", selector.owners),
        urns=tuple(selector.urns),
    )


def resolve_scope(graph: MetadataGraph, spec: EstateSpec, ctx: MetadataContext) -> Scope:
    primary = ctx.primary_of
    datasets = {a.urn for a in ctx.datasets()}
    tier_of: dict[str, str] = {}
    hits: list[SelectorHit] = []
    for tier in spec.tiers:
        for index, selector in enumerate(tier.match):
            matched = {primary.get(u, u) for u in graph.search(selector_query(selector))}
            matched &= datasets
            hits.append(SelectorHit(tier.name, index, len(matched), selector.describe()))
            for urn in sorted(matched):
                tier_of.setdefault(urn, tier.name)
    unmatched = tuple(sorted(datasets - tier_of.keys()))
    return Scope(
        tier_of=tuple(sorted(tier_of.items())), selector_hits=tuple(hits), unmatched=unmatched
    )
