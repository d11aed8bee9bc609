"""Tier selectors evaluated over the facts themselves, for what-if scoring.

The authoritative scope comes from DataHub search (upstream_dagster/datahub/scope.py). A what-if
context has no DataHub behind it, so simulation matches selectors here with the same semantics;
the verify step compares what DataHub then says with what simulation projected.
"""

from __future__ import annotations

from upstream_dagster.conformance.context import AssetFacts, MetadataContext
from upstream_dagster.conformance.tiers import Scope, SelectorHit
from upstream_dagster.spec.models import EstateSpec, Selector
from upstream_dagster.spec.urns import name_matches, platform_of, to_urns


def matches(asset: AssetFacts, selector: Selector) -> bool:
    urns = (asset.urn, *asset.twins)
    checks = [
        not selector.platforms or any(platform_of(u) in selector.platforms for u in urns),
        not selector.names or any(name_matches(u, p) for u in urns for p in selector.names),
        not selector.urns or any(u in selector.urns for u in urns),
        not selector.domains
        or bool(set(to_urns("domains", selector.domains)) & set(asset.domains)),
        not selector.tags or bool(set(to_urns("tags", selector.tags)) & set(asset.tags)),
        not selector.terms or bool(set(to_urns("terms", selector.terms)) & set(asset.terms)),
        not selector.owners or bool(set(to_urns("owners", selector.owners)) & set(asset.owners)),
    ]
    return all(checks)


def resolve(ctx: MetadataContext, spec: EstateSpec) -> Scope:
    datasets = ctx.datasets()
    tier_of: dict[str, str] = {}
    hits = []
    for tier in spec.tiers:
        for index, selector in enumerate(tier.match):
            found = [a.urn for a in datasets if matches(a, selector)]
            hits.append(SelectorHit(tier.name, index, len(found), selector.describe()))
            for urn in found:
                tier_of.setdefault(urn, tier.name)
    unmatched = tuple(sorted(a.urn for a in datasets if a.urn not in tier_of))
    return Scope(
        tier_of=tuple(sorted(tier_of.items())), selector_hits=tuple(hits), unmatched=unmatched
    )
