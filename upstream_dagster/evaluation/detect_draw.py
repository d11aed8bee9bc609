"""The faults `upstream detect` tries: for each tier that sets min_fault_detection, a seeded draw
over its assets and their feeds (every relation upstream of them), from the fault kinds the
random suites draw (`draw_kinds`: the classic kinds, and the small partial ones a quarter of
the time). The same seed, estate and estate.yaml draw the same faults; each tier draws from a
generator of its own, so adding a tier leaves the others' faults as they were."""

from __future__ import annotations

import random
from dataclasses import dataclass

from upstream_dagster.conformance.tiers import Scope
from upstream_dagster.evaluation.draw_kinds import fault, kinds, partial, partial_kinds
from upstream_dagster.evaluation.estate_model import Estate
from upstream_dagster.evaluation.scenario import Fault
from upstream_dagster.spec.models import DetectionPolicy, EstateSpec

PARTIAL = 0.25  # the share of small, partial faults, as in the random suites


@dataclass(frozen=True)
class Planned:
    tier: str
    asset: str  # the scored asset's URN
    fault: Fault

    @property
    def label(self) -> str:
        return describe(self.fault)


def describe(f: Fault) -> str:
    """What a person reads: the kind, where, and how much."""
    where = f.table + (f".{f.column}" if f.column else "")
    size = []
    if f.fraction is not None:
        size.append(f"{f.fraction:.0%} of rows")
    if f.factor is not None:
        size.append(f"x{f.factor:g}")
    if f.hours is not None:
        size.append(f"{f.hours:+g}h" if f.kind == "shift_time" else f"{f.hours:g}h")
    if f.days is not None:
        size.append(f"last {f.days} days" if f.kind != "out_of_order" else f"day -{f.days}")
    if f.to and f.kind in ("rename_column", "change_type"):
        size.append(f"to {f.to}")
    if f.where:
        size.append(f"where {f.where}")
    if f.value and f.kind == "set_value":
        size.append(f"set to {f.value}")
    return f"{f.kind} on {where}" + (f" ({', '.join(size)})" if size else "")


def targets(estate: Estate, relation: str) -> list[str]:
    """The asset's relation and its feeds, where a fault can be put: a model's code, a feed's
    or a seed's rows (a view that no model builds has no rows of its own to break)."""
    out = sorted({relation} | estate.upstream_of(relation))
    return [
        r for r in out if r in estate.relations and (r in estate.models or r not in estate.views)
    ]


def _one(rng: random.Random, estate: Estate, relation: str) -> Fault | None:
    small = rng.random() < PARTIAL
    options = partial_kinds(estate, relation) if small else kinds(estate, relation)
    if not options:
        return None
    kind = rng.choice(options)
    body = (partial if small else fault)(rng, estate, relation, kind)
    return Fault.model_validate(body)


def tier_assets(spec: EstateSpec, scope: Scope, tier: str, estate: Estate) -> list[str]:
    """The tier's scored assets the warehouse holds (one URN per relation), in a stable order."""
    seen: dict[str, str] = {}
    for urn, name in scope.tier_of:
        rel = estate.relation(urn)
        if name == tier and rel in estate.relations:
            seen.setdefault(rel, urn)
    return [seen[r] for r in sorted(seen)]


def draw(estate: Estate, spec: EstateSpec, scope: Scope, policy: DetectionPolicy) -> list[Planned]:
    """``policy.faults_per_tier`` faults for each tier asking for detection, its assets taken
    in turn; interleaved across tiers, so a time budget spent early cuts every tier alike."""
    per_tier: list[list[Planned]] = []
    for tier in spec.tiers:
        if not tier.requirements.min_fault_detection:
            continue
        rng = random.Random(f"{policy.seed}/{tier.name}")
        assets = tier_assets(spec, scope, tier.name, estate)
        options = [(a, targets(estate, estate.relation(a))) for a in assets]
        options = [(a, t) for a, t in options if t]
        drawn: list[Planned] = []
        for i in range(policy.faults_per_tier if options else 0):
            asset, where = options[i % len(options)]
            found = _one(rng, estate, rng.choice(where))
            if found is not None:
                drawn.append(Planned(tier.name, asset, found))
        per_tier.append(drawn)
    out = []
    for i in range(max((len(d) for d in per_tier), default=0)):
        out += [d[i] for d in per_tier if i < len(d)]
    return out
