"""Proposals: intended changes that would close a violation, each citing where its value came from.

A proposal never carries a whole aspect, only the change (add this owner, set this description),
so applying it can never overwrite anybody else's values.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from typing import Literal

from upstream_dagster.conformance.context import AssertionFact, AssetFacts, MetadataContext

ChangeKind = Literal[
    "add_owner",
    "set_description",
    "add_term",
    "set_domain",
    "add_tag",
    "add_assertions",
    "set_structured_property",
    "add_memory",
    "add_column_tag",
]


@dataclass(frozen=True)
class Change:
    kind: ChangeKind
    values: tuple[str, ...]  # owner / term / domain URNs, the description, assertion templates


@dataclass(frozen=True)
class Price:
    """What the change does to the dial, measured by re-scoring a what-if context."""

    delta_points: float
    checks_fixed: int
    checks_broken: int
    downstream: int
    downstream_top_tier: int


@dataclass(frozen=True)
class Proposal:
    id: str
    asset: str
    tier: str
    requirement: str
    change: Change
    evidence: tuple[str, ...]
    risk: float = 0.0
    price: Price | None = None
    # Narrated wording of a description, shown to the reviewer and written if approved. Not
    # part of the digest: the grounded template decides, the prose only says it better.
    prose: str | None = None

    def effective_change(self) -> Change:
        if self.prose and self.change.kind == "set_description":
            return Change("set_description", (self.prose,))
        return self.change


@dataclass(frozen=True)
class Unfixable:
    asset: str
    tier: str
    requirement: str
    reason: str


def proposal_id(asset: str, requirement: str, change: Change) -> str:
    raw = json.dumps([asset, requirement, change.kind, list(change.values)])
    return "p-" + hashlib.sha256(raw.encode()).hexdigest()[:10]


def assertion_urn(asset: str, template: str) -> str:
    """Deterministic, so a second write of the same guard updates it instead of duplicating."""
    return (
        "urn:li:assertion:upstream-"
        + hashlib.sha256(f"{asset}|{template}".encode()).hexdigest()[:24]
    )


def apply_change(asset: AssetFacts, change: Change, at_ms: int | None = None) -> AssetFacts:
    """The asset as it reads once ``change`` is written at ``at_ms``. A proposed assertion is
    evaluated once when it is written (and on every build after), so it reads as run then."""
    if change.kind == "add_owner":
        return replace(asset, owners=tuple(sorted({*asset.owners, *change.values})))
    if change.kind == "set_description":
        return replace(asset, description=change.values[0])
    if change.kind == "add_term":
        return replace(asset, terms=tuple(sorted({*asset.terms, *change.values})))
    if change.kind == "set_domain":
        return replace(asset, domains=(change.values[0],))
    if change.kind == "add_tag":
        return replace(asset, tags=tuple(sorted({*asset.tags, *change.values})))
    if change.kind == "set_structured_property":
        prop, *values = change.values
        kept = tuple(p for p in asset.structured_properties if p[0] != prop)
        return replace(asset, structured_properties=tuple(sorted((*kept, (prop, tuple(values))))))
    if change.kind in ("add_memory", "add_column_tag"):
        return asset  # institutional memory and column tags are not scored requirements
    if change.kind == "add_assertions":
        new = tuple(
            AssertionFact(
                assertion_urn(asset.urn, t),
                f"upstream:{t}",
                last_result=None if at_ms is None else "SUCCESS",
                last_run_ms=at_ms,
            )
            for t in change.values
        )
        known = {a.urn for a in asset.assertions}
        return replace(
            asset, assertions=asset.assertions + tuple(a for a in new if a.urn not in known)
        )
    raise ValueError(f"unknown change kind {change.kind!r}")


def apply_all(ctx: MetadataContext, proposals: tuple[Proposal, ...]) -> MetadataContext:
    """A what-if copy of the context with every proposal applied."""
    changed = dict(ctx.by_urn)
    for p in proposals:
        changed[p.asset] = apply_change(changed[p.asset], p.change, ctx.as_of_ms)
    return replace(ctx, assets=tuple(changed[a.urn] for a in ctx.assets))


def batch_digest(proposals: tuple[Proposal, ...], base_percent: float) -> str:
    """Content digest of a batch: the same proposals over the same graph state, the same digest."""
    body = [
        [p.id, p.asset, p.requirement, p.change.kind, list(p.change.values), list(p.evidence)]
        for p in proposals
    ]
    raw = json.dumps({"proposals": body, "base": base_percent}, sort_keys=True)
    return hashlib.sha256(raw.encode()).hexdigest()[:16]
