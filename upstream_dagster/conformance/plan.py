"""Plan: violations become grounded proposals, priced by simulation through the dial's own code.

Every value cites where it came from in the graph (`infer`). A requirement with nothing in the
graph to infer from stays a violation, listed with the rule that looked and what it found:
guessing into a catalog people trust is worse than a gap. Proposals whose simulated benefit is
nothing are dropped, not shown, except column descriptions carried along lineage onto a table
that needs no description: no requirement scores columns, and a steward still wants them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from upstream_dagster.conformance import match
from upstream_dagster.conformance.carry import Carry
from upstream_dagster.conformance.context import MetadataContext
from upstream_dagster.conformance.fields import field_name
from upstream_dagster.conformance.infer import Abstain, infer, infer_columns, walk
from upstream_dagster.conformance.proposals import (
    Price,
    Proposal,
    Unfixable,
    apply_all,
    batch_digest,
    proposal_id,
)
from upstream_dagster.conformance.requirements import GENERATED, is_generated
from upstream_dagster.conformance.risk import rank_violations
from upstream_dagster.conformance.score import Dial, score
from upstream_dagster.spec.models import EstateSpec
from upstream_dagster.spec.urns import display


@dataclass(frozen=True)
class Plan:
    digest: str
    base: Dial
    projected: Dial  # the dial with the whole batch applied: the number verify must measure
    proposals: tuple[Proposal, ...]
    unfixable: tuple[Unfixable, ...]
    dropped: int  # proposals with no simulated benefit
    deferred: int = 0  # priced proposals beyond max_proposals_per_run: the next batch's
    # display names of the URNs the batch would write and of the assets that stay violations
    names: tuple[tuple[str, str], ...] = ()

    def display(self, value: str) -> str:
        """A proposed value as a reviewer reads it: DataHub's display name for a URN."""
        return display(value, dict(self.names)) if value.startswith("urn:") else value

    def shown(self, p: Proposal) -> str:
        """A proposal's value as a reviewer reads it: display names, a generated text marked
        as such, the column descriptions written with a description counted and named as
        people name fields."""
        change = p.effective_change()
        if change.kind == "set_column_descriptions":
            paths = change.values[::2]
            names = ", ".join(field_name(path) for path in paths[:3])
            more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
            return f"{_count(len(paths), 'column description')} inherited: {names}{more}"
        value = ", ".join(self.display(v) for v in change.values)
        if change.kind == "set_description" and is_generated(change.values[0]):
            value = "[generated] " + value.removeprefix(GENERATED)
        if change.columns:
            names = ", ".join(field_name(path) for path, _ in change.columns[:3])
            more = f" and {len(change.columns) - 3} more" if len(change.columns) > 3 else ""
            value += f" (+ {_count(len(change.columns), 'column description')}: {names}{more})"
        return value

    def by_gain(self) -> list[Proposal]:
        """The proposals as a reviewer reads them: the biggest gain first, then the riskiest
        violation closed, then the most downstream, then by id."""
        reach = {p.id: p.price.downstream if p.price else 0 for p in self.proposals}
        return sorted(self.proposals, key=lambda p: (-gain(p), -p.risk, -reach[p.id], p.id))

    def records(self) -> list[dict[str, str | float]]:
        """One row per proposal, by gain, as both the command line and the UI show it."""
        checks = self.base.overall.checks or 1
        rows: list[dict[str, str | float]] = []
        for p in self.by_gain():
            price = p.price
            rows.append(
                {
                    "id": p.id,
                    "asset": self.display(p.asset),
                    "requirement": p.requirement,
                    "change": p.change.kind,
                    "value": self.shown(p),
                    "evidence": "; ".join(p.evidence),
                    "points": round(price.delta_points, 3) if price else 0.0,
                    "risk": round(p.risk, 3),
                    "price": (
                        f"+{price.delta_points:.2f} pts: fixes {price.checks_fixed} of {checks} "
                        f"checks, breaks {price.checks_broken}; {price.downstream} assets "
                        f"downstream, {price.downstream_top_tier} in the most critical tier"
                        if price
                        else "not priced"
                    ),
                    "downstream": (
                        f"{price.downstream} ({price.downstream_top_tier} top tier)"
                        if price
                        else "-"
                    ),
                }
            )
        return rows

    def gain_note(self) -> str:
        """Why proposals share a price, when many do: the dial counts every check alike."""
        checks = self.base.overall.checks or 1
        shared: dict[float, list[Proposal]] = {}
        for p in self.proposals:
            if p.price is not None and p.price.checks_fixed == 1 and not p.price.checks_broken:
                shared.setdefault(p.price.delta_points, []).append(p)
        if not shared:
            return ""
        points, same = max(shared.items(), key=lambda kv: len(kv[1]))
        if len(same) < 2:
            return ""
        return (
            f"{len(same)} proposals close one check each of the {checks} the dial counts, "
            f"alike: +{points:.2f} points each. Within a gain they are listed by the risk of "
            "the violation each closes (highest first), then by how much lies downstream."
        )


def gain(p: Proposal) -> float:
    return p.price.delta_points if p.price else 0.0


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def simulate(
    ctx: MetadataContext, spec: EstateSpec, proposals: tuple[Proposal, ...], now_ms: int
) -> Dial:
    what_if = apply_all(ctx, proposals)
    return score(what_if, spec, match.resolve(what_if, spec), now_ms)


def _price(
    base: Dial, after: Dial, ctx: MetadataContext, p: Proposal, top_tiers: set[str]
) -> Price:
    before = {(r.asset, r.requirement): r.status for r in base.results}
    fixed = broken = 0
    for r in after.results:
        old = before.get((r.asset, r.requirement))
        fixed += old != "pass" and r.status == "pass"
        broken += old == "pass" and r.status != "pass"
    downstream = list(walk(ctx, p.asset, "downstreams"))
    tiers = dict((r.asset, r.tier) for r in base.results)
    return Price(
        round(after.overall.percent - base.overall.percent, 2),
        fixed,
        broken,
        len(downstream),
        sum(1 for d in downstream if tiers.get(d.urn) in top_tiers),
    )


COLUMNS = "column_descriptions"  # not a requirement: documentation carried along lineage


def _column_proposals(
    ctx: MetadataContext,
    carry: Carry,
    base: Dial,
    candidates: list[Proposal],
    rejected: frozenset[str],
) -> list[Proposal]:
    """Column descriptions inherited on scored assets whose own description needs no proposal
    (one that does carries its columns with it). Ranked after every violation: risk 0."""
    described = {p.asset for p in candidates if p.change.kind == "set_description"}
    tiers = dict((r.asset, r.tier) for r in base.results)
    found = []
    for asset, tier in sorted(tiers.items()):
        inferred = None if asset in described else infer_columns(ctx, carry, ctx.by_urn[asset])
        if inferred is not None:
            change, evidence = inferred
            pid = proposal_id(asset, COLUMNS, change)
            if pid not in rejected:
                found.append(Proposal(pid, asset, tier, COLUMNS, change, evidence))
    return found


def plan(
    ctx: MetadataContext,
    spec: EstateSpec,
    now_ms: int,
    rejected: frozenset[str] = frozenset(),
    authors: Mapping[str, str] | None = None,
    runnable: frozenset[str] | None = None,
) -> Plan:
    """``authors`` maps a dbt model file, as DataHub records it, to its main git author;
    ``runnable`` holds the datasets a proposed assertion can run on (their relation is in
    the warehouse). None: the caller does not say, and every dataset is taken as runnable."""
    base = score(ctx, spec, match.resolve(ctx, spec), now_ms)
    top = spec.critical_tiers
    carry = Carry(ctx)
    candidates: list[Proposal] = []
    unfixable: list[Unfixable] = []
    for v in rank_violations(ctx, spec, base.results, now_ms):
        r = v.check
        found = infer(ctx, carry, spec, r, authors, runnable)
        if isinstance(found, Abstain):
            unfixable.append(Unfixable(r.asset, r.tier, r.requirement, found.reason, found.looked))
            continue
        change, evidence = found
        pid = proposal_id(r.asset, r.requirement, change)
        if pid in rejected:
            unfixable.append(
                Unfixable(
                    r.asset,
                    r.tier,
                    r.requirement,
                    "a reviewer rejected the proposal for these inputs",
                    (f"rejected: {change.kind} {', '.join(change.values)[:120]}",),
                )
            )
            continue
        candidates.append(
            Proposal(pid, r.asset, r.tier, r.requirement, change, evidence, v.risk.score)
        )
    candidates += _column_proposals(ctx, carry, base, candidates, rejected)
    priced, dropped = [], 0
    for p in candidates:
        price = _price(base, simulate(ctx, spec, (p,), now_ms), ctx, p, top)
        # carried column documentation moves no check, and is still what a steward wants
        # ... nor do assertions that catch some of the faults that slipped through, not yet
        # enough to pass: each raises the asset's measured detection as priced in its evidence
        unscored = price.checks_broken == 0 and (
            p.change.kind == "set_column_descriptions" or p.requirement == "min_fault_detection"
        )
        if price.checks_fixed == 0 and price.delta_points <= 0 and not unscored:
            dropped += 1
            shown = ", ".join(p.change.values)[:120]
            unfixable.append(
                Unfixable(
                    p.asset,
                    p.tier,
                    p.requirement,
                    "re-scored with the inferred value, the check still does not pass: the "
                    "proposal was dropped",
                    (f"inferred: {p.change.kind} {shown}", *p.evidence),
                )
            )
            continue
        priced.append(replace(p, price=price))
    priced.sort(key=lambda p: (-p.risk, -(p.price.delta_points if p.price else 0), p.id))
    batch = tuple(priced[: spec.policies.max_proposals_per_run])
    projected = simulate(ctx, spec, batch, now_ms)
    digest = batch_digest(batch, base.overall.percent)
    deferred = len(priced) - len(batch)
    mentioned = {v for p in batch for v in p.change.values if v in ctx.name_of}
    labels = {u: ctx.label(u) for u in [*(p.asset for p in batch), *(u.asset for u in unfixable)]}
    names = tuple(sorted({**{v: ctx.name_of[v] for v in mentioned}, **labels}.items()))
    return Plan(digest, base, projected, batch, tuple(unfixable), dropped, deferred, names)
