"""Owners and domains from what a steward would look at, nearest evidence first.

Rules, in the order a steward reads the graph:

1. copies: datasets holding the same data (a replica, an export, a ``SELECT *`` view);
2. lineage: its direct upstreams and downstreams, the data jobs that read or write it, and
   the other assets built from the same parents on the same platform (the same layer);
3. container: the container it sits in (a schema, a bucket folder, a BI workspace) and the
   other assets in it;
4. consumers: the charts and dashboards that read it.

Each asset a rule finds is one vote, split evenly between its owners (an asset with twelve
owners names none of them strongly). The first rule whose votes have one leader decides; the
owners always found together on the same assets (a team, at most ``MAX_TEAM``) lead together.
When a rule ends in a tie, only the later rules can break it, among the tied; a tie no rule
breaks is a person's decision, and is said with who is tied and why.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction

from upstream_dagster.conformance.carry import Carry
from upstream_dagster.conformance.context import AssetFacts, MetadataContext

MAX_TEAM = 3  # owners found together on every asset a rule saw, proposed together
CONSUMERS = ("chart", "dashboard")


@dataclass(frozen=True)
class Witness:
    """One asset a rule looked at: how it relates to the asset, and its owners or domains."""

    urn: str
    relation: str  # "upstream", "a copy of it", "its container", "a dashboard reading it"
    values: tuple[str, ...]


@dataclass(frozen=True)
class Decision:
    evidence: tuple[str, ...]  # why, rule by rule, with the alternatives
    looked: tuple[str, ...]  # each rule consulted and what it found
    values: tuple[str, ...] = ()  # what to propose; empty: nothing to propose
    tie: bool = False  # the evidence is split evenly: a person must choose
    tied: str = ""  # the tie as a person reads it: where, between whom
    looked_at: int = 0  # distinct assets, containers and jobs the rules looked at


def _of(a: AssetFacts, kind: str) -> tuple[str, ...]:
    return a.owners if kind == "owners" else a.domains


def _copies(
    ctx: MetadataContext, carry: Carry, a: AssetFacts, kind: str
) -> Iterator[tuple[str, str]]:
    for other, via in carry.copies(a):
        hops = f", {len(via) + 1} hops away" if via else ""
        yield other.urn, f"holds the same data{hops}"


def _lineage(
    ctx: MetadataContext, carry: Carry, a: AssetFacts, kind: str
) -> Iterator[tuple[str, str]]:
    for up in a.upstreams:
        yield up, "upstream"
    for down in a.downstreams:
        if down in ctx.by_urn and ctx.by_urn[down].entity_type == "dataset":
            yield down, "downstream"
    for job in a.jobs:
        yield job, "a data job that reads or writes it"
    for up in a.upstreams:
        for sib in ctx.by_urn[up].downstreams if up in ctx.by_urn else ():
            other = ctx.by_urn.get(sib)
            if sib != a.urn and other is not None and other.platform == a.platform:
                yield sib, f"built from the same {ctx.label(up)}"


def _container(
    ctx: MetadataContext, carry: Carry, a: AssetFacts, kind: str
) -> Iterator[tuple[str, str]]:
    place = a.container
    for _ in range(3):  # the container's own owner, or its parent's
        found = ctx.around_by_urn.get(place)
        if found is None:
            break
        yield place, "its container" if place == a.container else "a container it sits in"
        place = found.container
    for other in ctx.assets:
        if other.urn != a.urn and a.container and other.container == a.container:
            yield other.urn, f"in the same container {ctx.display(a.container)}"


def _consumers(
    ctx: MetadataContext, carry: Carry, a: AssetFacts, kind: str
) -> Iterator[tuple[str, str]]:
    seen, layer = {a.urn}, [a.urn]
    for _ in range(2):  # a chart reading it, and the dashboard that shows the chart
        nxt = []
        for urn in layer:
            for down in ctx.by_urn[urn].downstreams if urn in ctx.by_urn else ():
                found = ctx.by_urn.get(down)
                if down not in seen and found is not None and found.entity_type in CONSUMERS:
                    seen.add(down)
                    nxt.append(down)
                    yield down, f"a {found.entity_type} reading it"
        layer = nxt


def _upstream(
    ctx: MetadataContext, carry: Carry, a: AssetFacts, kind: str
) -> Iterator[tuple[str, str]]:
    """The nearest layer of upstream lineage beyond the parents where anything has a value."""
    seen, layer, hops = {a.urn}, [a.urn], 0
    while layer:
        nxt = [
            u
            for urn in layer
            for u in (ctx.by_urn[urn].upstreams if urn in ctx.by_urn else ())
            if u in ctx.by_urn and u not in seen
        ]
        seen.update(nxt)
        layer, hops = list(dict.fromkeys(nxt)), hops + 1
        held = [u for u in layer if _of(ctx.by_urn[u], kind)]
        if hops > 1 and held:
            for u in held:
                yield u, f"{hops} hops upstream"
            return


def _domain_members(
    ctx: MetadataContext, carry: Carry, a: AssetFacts, kind: str
) -> Iterator[tuple[str, str]]:
    for domain in a.domains if kind == "owners" else ():
        for other in ctx.datasets():
            if other.urn != a.urn and domain in other.domains:
                yield other.urn, f"in its domain {ctx.display(domain)}"


Rule = Callable[[MetadataContext, Carry, AssetFacts, str], Iterator[tuple[str, str]]]
RULES: tuple[tuple[str, Rule], ...] = (
    ("copies", _copies),
    ("lineage", _lineage),
    ("container", _container),
    ("consumers", _consumers),
)
# Farther evidence, read only when the rules above found nothing at all: a farther ancestor
# or a domain never overrules nearer assets that disagree.
FALLBACKS: tuple[tuple[str, Rule], ...] = (
    ("upstream lineage", _upstream),
    ("domain", _domain_members),
)


def _facts(ctx: MetadataContext, urn: str) -> AssetFacts | None:
    return ctx.by_urn.get(urn) or ctx.around_by_urn.get(urn)


def witnesses(
    ctx: MetadataContext, carry: Carry, a: AssetFacts, rule: Rule, kind: str
) -> list[Witness]:
    out: dict[str, Witness] = {}
    for urn, relation in rule(ctx, carry, a, kind):
        found = _facts(ctx, urn)
        if found is not None and urn not in out:
            out[urn] = Witness(urn, relation, _of(found, kind))
    return list(out.values())


def _names(ctx: MetadataContext, values: tuple[str, ...] | list[str]) -> str:
    return ", ".join(ctx.display(v) for v in values)


def _few(ctx: MetadataContext, values: list[str]) -> str:
    shown = _names(ctx, values[:4])
    return shown + (f" and {len(values) - 4} more" if len(values) > 4 else "")


def _said(ctx: MetadataContext, w: Witness, kind: str) -> str:
    held = _few(ctx, list(w.values)) if w.values else f"no {kind[:-1]}"
    return f"{ctx.label(w.urn)} ({w.relation}): {held}"


def _summary(ctx: MetadataContext, rule: str, ws: list[Witness], kind: str) -> str:
    if not ws:
        return f"{rule}: nothing found"
    held = [w for w in ws if w.values]
    if not held:
        sample = ", ".join(ctx.label(w.urn) for w in ws[:3]) + (" ..." if len(ws) > 3 else "")
        return f"{rule}: {len(ws)} looked at ({sample}), none has {kind[:-1]}"
    return (
        f"{rule}: "
        + "; ".join(_said(ctx, w, kind) for w in held[:3])
        + (f"; {len(held) - 3} more" if len(held) > 3 else "")
    )


def _tally(ws: list[Witness], among: set[str] | None) -> dict[str, Fraction]:
    votes: dict[str, Fraction] = defaultdict(Fraction)
    for w in ws:
        for v in w.values:
            if among is None or v in among:
                votes[v] += Fraction(1, len(w.values))
    return votes


def _leaders(ws: list[Witness], votes: dict[str, Fraction]) -> tuple[str, ...]:
    """The single leader, or a team found together on exactly the same assets; else ()."""
    top = max(votes.values())
    lead = sorted(v for v, n in votes.items() if n == top)
    if len(lead) == 1:
        return tuple(lead)
    seen_on = {v: frozenset(w.urn for w in ws if v in w.values) for v in lead}
    if len(set(seen_on.values())) == 1 and len(lead) <= MAX_TEAM:
        return tuple(lead)
    return ()


def _share(n: Fraction) -> str:
    return f"{float(n):.2g}"


def decide(ctx: MetadataContext, carry: Carry, a: AssetFacts, kind: str, single: bool) -> Decision:
    """``kind``: "owners" or "domains"; ``single``: only one value may be proposed."""
    near = [(name, witnesses(ctx, carry, a, rule, kind)) for name, rule in RULES]
    found = _lead(ctx, kind, single, near)
    if found.values or found.tie:
        return found
    looked = found.looked
    urns = {w.urn for _, ws in near for w in ws}
    for name, rule in FALLBACKS:
        far = [(name, witnesses(ctx, carry, a, rule, kind))]
        urns |= {w.urn for w in far[0][1]}
        found = _lead(ctx, kind, single, far)
        looked += found.looked
        if found.values or found.tie:
            return Decision(found.evidence, looked, found.values, found.tie, found.tied)
    return Decision((), looked, looked_at=len(urns))


def _lead(
    ctx: MetadataContext, kind: str, single: bool, seen: list[tuple[str, list[Witness]]]
) -> Decision:
    """The first rule whose votes have one leader (or a team) decides; a tie is broken only
    by the later rules, among the tied."""
    among: set[str] | None = None
    looked: list[str] = []
    tied = ""
    for name, ws in seen:
        looked.append(_summary(ctx, name, ws, kind))
        votes = _tally(ws, among)
        if not votes:
            continue
        lead = _leaders(ws, votes)
        if lead and not (single and len(lead) > 1):
            return Decision(_evidence_for(ctx, kind, name, lead, votes, seen), tuple(looked), lead)
        top = max(votes.values())
        among = {v for v, n in votes.items() if n == top}
        who = _few(ctx, sorted(among))
        tied = tied or f"the {name} rule splits evenly between {who} ({_share(top)} each)"
        looked[-1] += f" (tied: {who}, {_share(top)} each)"
    return Decision((), tuple(looked), (), among is not None, tied)


def _evidence_for(
    ctx: MetadataContext,
    kind: str,
    rule: str,
    lead: tuple[str, ...],
    votes: dict[str, Fraction],
    seen: list[tuple[str, list[Witness]]],
) -> tuple[str, ...]:
    """The deciding rule's witnesses, the alternatives it saw, and the other rules that agree
    or name someone else."""
    ws = dict(seen)[rule]
    backing = [w for w in ws if set(lead) & set(w.values)]
    how = sorted({t for w in backing for o, t in _owner_types(ctx, w.urn) if o in lead})
    as_ = f" as {'/'.join(how)}" if how and kind == "owners" else ""
    first = f"{rule}: " + "; ".join(_said(ctx, w, kind) for w in backing[:3])
    first += f" ({len(backing)} of {len(ws)} looked at){as_}"
    others = sorted(
        ((v, n) for v, n in votes.items() if v not in lead), key=lambda x: (-x[1], x[0])
    )
    alt = (
        "alternatives: " + ", ".join(f"{ctx.display(v)} ({_share(n)})" for v, n in others[:3])
        if others
        else "no other candidate"
    )
    agree = [n for n, w in seen if n != rule and any(set(lead) & set(x.values) for x in w)]
    differ = sorted(
        {v for n, w in seen if n != rule for x in w for v in x.values if v not in lead}
        - {v for v, _ in others}
    )
    out = [first, alt]
    if agree:
        out.append(f"also named by: {', '.join(agree)}")
    if differ:
        out.append(f"other rules also name: {_names(ctx, differ[:3])}")
    return tuple(out)


def _owner_types(ctx: MetadataContext, urn: str) -> tuple[tuple[str, str], ...]:
    found = _facts(ctx, urn)
    return found.owner_types if found else ()
