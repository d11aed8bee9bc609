"""Risk of a violation, from graph facts, with the arithmetic shown.

    0.20 business criticality   tier criticality, critical domain, dashboards downstream
    0.15 historical fragility   decay-weighted incident history on the asset
    0.15 assertion health gap   share of its assertions not passing (1.0 with none)
    0.10 lineage depth          upstream hops x downstream fan-out, normalised over the estate
    0.10 governance violations  share of the asset's own checks that fail
    0.10 similarity             past incidents on the same asset
    0.10 business impact        critical glossary terms, critical domains, dashboards reached
    0.10 x (1 - confidence)     1.0 for governance violations; a controller supplies its own

A term whose facts do not exist yet (no incident has ever been recorded) is reported as not
evaluable with its reason and contributes nothing; it is never shown as a zero.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import TypeVar, cast

from upstream_dagster.conformance.context import AssetFacts, MetadataContext
from upstream_dagster.conformance.requirements import CheckResult
from upstream_dagster.spec.models import EstateSpec
from upstream_dagster.spec.urns import entity_type, to_urns

WEIGHTS: tuple[tuple[str, float], ...] = (
    ("criticality", 0.20),
    ("fragility", 0.15),
    ("assertion_gap", 0.15),
    ("lineage_depth", 0.10),
    ("governance", 0.10),
    ("similarity", 0.10),
    ("impact", 0.10),
    ("uncertainty", 0.10),
)
DAY_MS = 86_400_000
CONSUMERS = ("dashboard", "chart")
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Term:
    name: str
    weight: float
    value: float | None  # None: not evaluable
    why: str

    @property
    def contribution(self) -> float:
        return 0.0 if self.value is None else self.weight * self.value


@dataclass(frozen=True, slots=True)
class Risk:
    terms: tuple[Term, ...]

    @property
    def score(self) -> float:
        return round(sum(t.contribution for t in self.terms), 4)

    def explain(self) -> str:
        parts = []
        for t in self.terms:
            value = "n/a" if t.value is None else f"{t.value:.2f}"
            parts.append(f"{t.weight:.2f} x {t.name} {value} ({t.why})")
        return f"risk {self.score:.3f} = " + " + ".join(parts)


@lru_cache(maxsize=256)
def _uncertainty(confidence: float) -> Term:
    """One shared term per confidence (most violations share 1.0), not one per violation."""
    return Term("uncertainty", 0.10, 1.0 - confidence, f"confidence {confidence:.2f}")


class RiskModel:
    """Graph-wide facts computed once, then a risk per violation."""

    def __init__(
        self, ctx: MetadataContext, spec: EstateSpec, results: Sequence[CheckResult], now_ms: int
    ) -> None:
        self.ctx, self.spec, self.now = ctx, spec, now_ms
        self.tier_rank = {t.name: t.weight for t in spec.tiers}  # as estate.yaml declares it
        self.critical_domains = set(to_urns("domains", spec.policies.risk.critical_domains))
        self.critical_terms = set(to_urns("terms", spec.policies.risk.critical_terms))
        self.any_incidents = any(a.incidents for a in ctx.assets)
        by_asset: dict[str, list[CheckResult]] = {}
        for r in results:
            by_asset.setdefault(r.asset, []).append(r)
        self.checks = by_asset
        self._terms: dict[tuple[str, str], tuple[Term, ...]] = {}
        # Most assets' terms read the same (no incidents, 1 of 3 checks failing, no critical
        # term): one shared Term, term tuple and Risk per distinct value, not one per asset
        self._shared: dict[object, object] = {}

    def _one(self, value: _T) -> _T:
        return cast(_T, self._shared.setdefault(value, value))

    @cached_property
    def depth(self) -> Mapping[str, int]:
        memo: dict[str, int] = {}
        for urn in sorted(self.ctx.by_urn):
            stack, seen = [urn], set()
            while stack:  # iterative post-order DFS: deep estates must not hit recursion limits
                node = stack[-1]
                ups = [u for u in self.ctx.by_urn[node].upstreams if u in self.ctx.by_urn]
                pending = [u for u in ups if u not in memo and u not in seen]
                if pending:
                    seen.update(pending)
                    stack.extend(pending)
                    continue
                stack.pop()
                memo[node] = 1 + max((memo.get(u, 0) for u in ups), default=-1)
        return memo

    @cached_property
    def _downstream(self) -> Mapping[str, tuple[int, int]]:
        """Per asset: how many assets are downstream of it (transitively) and how many of those
        are dashboards or charts. The transitive sets are built deepest first and each is
        dropped once every asset upstream of it has read it: at a million datasets, keeping
        them all was the ranking's peak."""
        by_urn = self.ctx.by_urn
        order = sorted(self.depth, key=lambda u: -self.depth[u])
        readers = Counter(d for urn in order for d in by_urn[urn].downstreams)
        sets: dict[str, frozenset[str]] = {}
        out: dict[str, tuple[int, int]] = {}
        for urn in order:
            downs: set[str] = set()
            for d in by_urn[urn].downstreams:
                downs.add(d)
                downs |= sets.get(d, frozenset())
            if readers[urn]:  # an asset upstream still reads it
                sets[urn] = frozenset(downs)
            out[urn] = (len(downs), sum(1 for d in downs if entity_type(d) in CONSUMERS))
            for d in by_urn[urn].downstreams:
                readers[d] -= 1
                if not readers[d]:
                    sets.pop(d, None)
        return out

    @cached_property
    def max_depth_fanout(self) -> int:
        return max((self.depth[u] * self.fanout(u) for u in self.depth), default=0) or 1

    def fanout(self, urn: str) -> int:
        """How many assets are downstream of ``urn``, transitively."""
        return self._downstream.get(urn, (0, 0))[0]

    def consumers(self, urn: str) -> int:
        """How many dashboards or charts are downstream of ``urn``, transitively."""
        return self._downstream.get(urn, (0, 0))[1]

    def _asset_terms(self, urn: str, tier: str) -> tuple[Term, ...]:
        """Every term but uncertainty depends on the asset and its tier only: compute once."""
        key = (urn, tier)
        if key not in self._terms:
            a = self.ctx.by_urn[urn]
            terms = (
                self._criticality(a, tier),
                self._fragility(a),
                self._assertion_gap(a),
                self._depth(a),
                self._governance(a),
                self._similarity(a),
                self._impact(a),
            )
            self._terms[key] = self._one(tuple(self._one(t) for t in terms))
        return self._terms[key]

    def risk(self, result: CheckResult, confidence: float = 1.0) -> Risk:
        terms = (*self._asset_terms(result.asset, result.tier), _uncertainty(confidence))
        return self._one(Risk(terms=terms))

    def _criticality(self, a: AssetFacts, tier: str) -> Term:
        rank = self.tier_rank.get(tier, 0.0)
        exec_facing = 1.0 if self.consumers(a.urn) else 0.0
        critical = 1.0 if self.critical_domains & set(a.domains) else 0.0
        value = 0.5 * rank + 0.3 * exec_facing + 0.2 * critical
        return Term(
            "criticality",
            0.20,
            value,
            f"tier criticality {rank:.2f}, {self.consumers(a.urn)} dashboards downstream, "
            f"critical domain {'yes' if critical else 'no'}",
        )

    def _fragility(self, a: AssetFacts) -> Term:
        if not self.any_incidents:
            return Term("fragility", 0.15, None, "no incident history in DataHub yet")
        weight = sum(
            math.exp(-max(0, self.now - i.created_ms) / (30 * DAY_MS)) for i in a.incidents
        )
        return Term(
            "fragility", 0.15, min(1.0, weight), f"{len(a.incidents)} incidents, 30-day decay"
        )

    def _assertion_gap(self, a: AssetFacts) -> Term:
        if not a.assertions:
            return Term("assertion_gap", 0.15, 1.0, "no assertions")
        bad = sum(1 for x in a.assertions if x.last_result != "SUCCESS")
        return Term(
            "assertion_gap",
            0.15,
            bad / len(a.assertions),
            f"{bad} of {len(a.assertions)} assertions not passing",
        )

    def _depth(self, a: AssetFacts) -> Term:
        depth, fan = self.depth.get(a.urn, 0), self.fanout(a.urn)
        return Term(
            "lineage_depth",
            0.10,
            depth * fan / self.max_depth_fanout,
            f"{depth} hops up x {fan} downstream",
        )

    def _governance(self, a: AssetFacts) -> Term:
        mine = self.checks.get(a.urn, [])
        bad = sum(1 for r in mine if r.status != "pass")
        return Term(
            "governance",
            0.10,
            bad / len(mine) if mine else 0.0,
            f"{bad} of {len(mine)} checks failing",
        )

    def _similarity(self, a: AssetFacts) -> Term:
        if not self.any_incidents:
            return Term("similarity", 0.10, None, "no past incidents in DataHub to compare")
        return Term(
            "similarity",
            0.10,
            1.0 if a.incidents else 0.0,
            f"{len(a.incidents)} past incidents on this asset",
        )

    def _impact(self, a: AssetFacts) -> Term:
        terms = 1.0 if self.critical_terms & set(a.terms) else 0.0
        domain = 1.0 if self.critical_domains & set(a.domains) else 0.0
        dashboards = min(1.0, self.consumers(a.urn) / 3)
        return Term(
            "impact",
            0.10,
            0.4 * terms + 0.3 * domain + 0.3 * dashboards,
            f"critical term {'yes' if terms else 'no'}, critical domain "
            f"{'yes' if domain else 'no'}, {self.consumers(a.urn)} dashboards",
        )


@dataclass(frozen=True, slots=True)
class Violation:
    check: CheckResult
    risk: Risk


def rank_violations(
    ctx: MetadataContext, spec: EstateSpec, results: Sequence[CheckResult], now_ms: int
) -> tuple[Violation, ...]:
    model = RiskModel(ctx, spec, results, now_ms)
    found = [Violation(r, model.risk(r)) for r in results if r.status != "pass"]
    found.sort(key=lambda v: (-v.risk.score, v.check.asset, v.check.requirement))
    return tuple(found)
