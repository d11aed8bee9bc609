"""Proposals: intended changes that would close a violation, each citing where its value came from.

A proposal never carries a whole aspect, only the change (add this owner, set this description),
so applying it can never overwrite anybody else's values.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from typing import Literal

from upstream_dagster.conformance.context import (
    AssertionFact,
    AssetFacts,
    Column,
    MetadataContext,
)
from upstream_dagster.conformance.requirements import GENERATED, is_generated
from upstream_dagster.conformance.requirements import assertion_urn as assertion_urn

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
    "set_column_descriptions",
]


@dataclass(frozen=True)
class Change:
    kind: ChangeKind
    values: tuple[str, ...]  # owner / term / domain URNs, the description, assertion templates
    # set_description: (field path, description) of undocumented columns, written with it
    columns: tuple[tuple[str, str], ...] = ()


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
        """What is written: the narrated wording when there is one, still labelled as
        generated when the grounded text was (the check reads the label back)."""
        if self.prose and self.change.kind == "set_description":
            keep = is_generated(self.change.values[0]) and not is_generated(self.prose)
            text = GENERATED + self.prose if keep else self.prose
            return Change("set_description", (text,), self.change.columns)
        return self.change


@dataclass(frozen=True)
class Unfixable:
    asset: str
    tier: str
    requirement: str
    reason: str  # why it stays a violation, naming the rule that looked and what it found
    looked: tuple[str, ...] = ()  # every rule consulted and what each found


def _body(change: Change) -> list[object]:
    body: list[object] = [change.kind, list(change.values)]
    return body + [[list(c) for c in change.columns]] if change.columns else body


def proposal_id(asset: str, requirement: str, change: Change) -> str:
    raw = json.dumps([asset, requirement, *_body(change)])
    return "p-" + hashlib.sha256(raw.encode()).hexdigest()[:10]


def apply_change(asset: AssetFacts, change: Change, at_ms: int | None = None) -> AssetFacts:
    """The asset as it reads once ``change`` is written at ``at_ms``. A proposed assertion is
    evaluated once when it is written (and on every build after), so it reads as run then."""
    if change.kind == "add_owner":
        return replace(asset, owners=tuple(sorted({*asset.owners, *change.values})))
    if change.kind == "set_description":
        return replace(
            asset, description=change.values[0], columns=_documented(asset, change.columns)
        )
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
    if change.kind == "set_column_descriptions":
        pairs = tuple(zip(change.values[::2], change.values[1::2], strict=True))
        return replace(asset, columns=_documented(asset, pairs))
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


def _documented(asset: AssetFacts, texts: tuple[tuple[str, str], ...]) -> tuple[Column, ...]:
    """The asset's columns with ``texts`` written as the descriptions of those fields."""
    wanted = dict(texts)
    return tuple(
        c._replace(description=wanted[c.path]) if c.path in wanted else c for c in asset.columns
    )


def apply_all(ctx: MetadataContext, proposals: tuple[Proposal, ...]) -> MetadataContext:
    """A what-if copy of the context with every proposal applied."""
    changed = dict(ctx.by_urn)
    for p in proposals:
        changed[p.asset] = apply_change(changed[p.asset], p.change, ctx.as_of_ms)
    return replace(ctx, assets=tuple(changed[a.urn] for a in ctx.assets))


def batch_digest(proposals: tuple[Proposal, ...], base_percent: float) -> str:
    """Content digest of a batch: the same proposals over the same graph state, the same digest."""
    body = [[p.id, p.asset, p.requirement, *_body(p.change), list(p.evidence)] for p in proposals]
    raw = json.dumps({"proposals": body, "base": base_percent}, sort_keys=True)
    return hashlib.sha256(raw.encode()).hexdigest()[:16]
