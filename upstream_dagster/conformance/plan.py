"""Plan: violations become grounded proposals, priced by simulation through the dial's own code.

Every value cites where it came from in the graph. A requirement with nothing in the graph to
infer from stays a violation, listed with its reason: guessing into a catalog people trust is
worse than a gap. Proposals whose simulated benefit is nothing are dropped, not shown.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace

from upstream_dagster.conformance import match
from upstream_dagster.conformance.context import AssetFacts, MetadataContext
from upstream_dagster.conformance.proposals import (
    Change,
    Price,
    Proposal,
    Unfixable,
    apply_all,
    batch_digest,
    proposal_id,
)
from upstream_dagster.conformance.requirements import CheckResult, ran
from upstream_dagster.conformance.risk import rank_violations
from upstream_dagster.conformance.score import Dial, score
from upstream_dagster.spec.models import EstateSpec
from upstream_dagster.spec.urns import display, field_dataset, field_path, short

NO_SOURCE = {
    "require_tags": "no tag of that name anywhere near this asset in the graph",
    "freshness_sla_hours": "freshness is restored by running the pipeline, not by metadata",
    "max_open_incident_hours": "an open incident is closed by resolving it, not by metadata",
    "required_structured_properties": "nothing in the graph records this value (e.g. a "
    "retention period); a person must set it",
}


@dataclass(frozen=True)
class Plan:
    digest: str
    base: Dial
    projected: Dial  # the dial with the whole batch applied: the number verify must measure
    proposals: tuple[Proposal, ...]
    unfixable: tuple[Unfixable, ...]
    dropped: int  # proposals with no simulated benefit
    deferred: int = 0  # priced proposals beyond max_proposals_per_run: the next batch's
    names: tuple[tuple[str, str], ...] = ()  # display names of the URNs the batch would write

    def display(self, value: str) -> str:
        """A proposed value as a reviewer reads it: DataHub's display name for a URN."""
        return display(value, dict(self.names)) if value.startswith("urn:") else value


def _walk(ctx: MetadataContext, start: str, direction: str) -> Iterator[AssetFacts]:
    """Assets in lineage order, nearest first (breadth-first), the start excluded."""
    seen, queue = {start}, deque([start])
    while queue:
        for nxt in getattr(ctx.by_urn[queue.popleft()], direction):
            if nxt not in seen and nxt in ctx.by_urn:
                seen.add(nxt)
                queue.append(nxt)
                yield ctx.by_urn[nxt]


Found = tuple[Change, tuple[str, ...]]


def neighbours(ctx: MetadataContext, a: AssetFacts) -> list[AssetFacts]:
    """The assets a steward looks at first: direct upstreams, siblings (the other assets built
    from the same parents) and direct downstreams, datasets only, each once."""
    seen: dict[str, None] = {}
    for up in a.upstreams:
        seen[up] = None
    for up in a.upstreams:
        for sib in ctx.by_urn[up].downstreams if up in ctx.by_urn else ():
            seen[sib] = None
    for down in a.downstreams:
        seen[down] = None
    seen.pop(a.urn, None)
    return [
        ctx.by_urn[u] for u in seen if u in ctx.by_urn and ctx.by_urn[u].entity_type == "dataset"
    ]


def _owner_vote(ctx: MetadataContext, around: list[AssetFacts], where: str) -> Found | str | None:
    """The owner most of ``around`` share, with how they own and the alternatives; a tie at the
    top is no proposal (a person decides), said with the candidates."""
    votes: Counter[str] = Counter(o for x in around for o in x.owners)
    if not votes:
        return None
    ranked = sorted(votes.items(), key=lambda kv: (-kv[1], kv[0]))
    owner, n = ranked[0]
    if len(ranked) > 1 and ranked[1][1] == n:
        tied = [ctx.display(o) for o, k in ranked if k == n]
        return f"{where} are split between {', '.join(tied)} ({n} each): a person must choose"
    kinds = Counter(t for x in around for o, t in x.owner_types if o == owner)
    how = f" as {'/'.join(sorted(kinds))}" if kinds else ""
    owned = sum(1 for x in around if x.owners)
    others = ", ".join(f"{ctx.display(o)} ({k})" for o, k in ranked[1:4])
    evidence = f"{where}: {ctx.display(owner)} owns {n} of {owned} owned{how}"
    return Change("add_owner", (owner,)), (
        evidence + (f"; alternatives: {others}" if others else "; no other owner among them"),
    )


def infer_owner(
    ctx: MetadataContext, a: AssetFacts, authors: Mapping[str, str] | None = None
) -> Found | str | None:
    """By vote: the neighbours (upstreams, siblings, downstreams), else the nearest owned layer
    of upstream lineage, else the asset's domain, else the person with most commits to its
    dbt model. A tie is no proposal."""
    found = _owner_vote(ctx, neighbours(ctx, a), "neighbours")
    if found is not None:
        return found
    for layer in _layers(ctx, a.urn, "upstreams"):
        if any(x.owners for x in layer):
            return _owner_vote(
                ctx, layer, f"lineage ({len(layer)} upstreams at the nearest owned hop)"
            )
    for domain in a.domains:
        in_domain = [x for x in ctx.datasets() if domain in x.domains and x.urn != a.urn]
        found = _owner_vote(ctx, in_domain, f"domain {ctx.display(domain)}")
        if found is not None:
            return found
    path = dict(a.properties).get("dbt_file_path", "")
    author = (authors or {}).get(path)
    if author:
        return Change("add_owner", (f"urn:li:corpuser:{author}",)), (
            f"git: {author} made the most commits to {path}",
        )
    return None


def _layers(ctx: MetadataContext, start: str, direction: str) -> Iterator[list[AssetFacts]]:
    """Lineage one hop at a time: the assets at distance 1, then 2, ... (the start excluded)."""
    seen, layer = {start}, [start]
    while layer:
        nxt = []
        for urn in layer:
            for u in getattr(ctx.by_urn[urn], direction):
                if u not in seen and u in ctx.by_urn:
                    seen.add(u)
                    nxt.append(u)
        if nxt:
            yield [ctx.by_urn[u] for u in nxt]
        layer = nxt


def infer_description(
    a: AssetFacts, label: Callable[[str], str] = short
) -> tuple[Change, tuple[str, ...]] | None:
    """A factual description from the schema and lineage, naming assets as DataHub shows
    them (``label``: the display name and platform of a URN)."""
    if not a.columns and not a.upstreams:
        return None
    cols = [c.path for c in a.columns]
    name = a.display_name or a.short_name
    parts = [
        f"{name}: {len(cols)} columns ({', '.join(cols[:6])}"
        + (", ..." if len(cols) > 6 else "")
        + ")."
        if cols
        else f"{name}."
    ]
    if a.upstreams:
        parts.append(
            "Built from "
            + ", ".join(label(u) for u in a.upstreams[:4])
            + (" and others." if len(a.upstreams) > 4 else ".")
        )
    evidence = tuple(
        x
        for x in (
            f"schema: {len(cols)} fields" if cols else "",
            f"lineage: {len(a.upstreams)} upstreams" if a.upstreams else "",
        )
        if x
    )
    return Change("set_description", (" ".join(parts),)), evidence


def infer_term(ctx: MetadataContext, a: AssetFacts) -> tuple[Change, tuple[str, ...]] | None:
    column_terms = Counter(t for c in a.columns for t in c.terms)
    if not column_terms:  # terms on the upstream columns that feed this asset's columns
        feeding = {u for u, d in ctx.column_edges if d.startswith(f"urn:li:schemaField:({a.urn},")}
        for field in sorted(feeding):
            dataset, path = field_dataset(field) or "", field_path(field)
            source = ctx.by_urn.get(dataset)
            column_terms.update(
                t for c in (source.columns if source else ()) if c.path == path for t in c.terms
            )
        if column_terms:
            term = min(column_terms, key=lambda t: (-column_terms[t], t))
            return Change("add_term", (term,)), (
                f"column lineage: upstream columns feeding it carry {ctx.display(term)}",
            )
    if column_terms:
        term = min(column_terms, key=lambda t: (-column_terms[t], t))
        cols = [c.path for c in a.columns if term in c.terms]
        return Change("add_term", (term,)), (
            f"columns {', '.join(cols[:3])} carry {ctx.display(term)}",
        )
    for up in _walk(ctx, a.urn, "upstreams"):
        if len(up.terms) == 1:
            return Change("add_term", up.terms), (
                f"lineage: upstream {short(up.urn)} carries {ctx.display(up.terms[0])}",
            )
    return None


def infer_domain(ctx: MetadataContext, a: AssetFacts) -> Found | str | None:
    """The domain of the nearest upstreams that have one, when they agree on exactly one.
    Parents that disagree (or one parent in two domains) is no proposal: it says so, and a
    farther ancestor never overrules the nearer ones."""
    for layer in _layers(ctx, a.urn, "upstreams"):
        placed = [x for x in layer if x.domains]
        if not placed:
            continue
        found = sorted({d for x in placed for d in x.domains})
        if len(found) != 1:
            names = ", ".join(ctx.display(d) for d in found)
            return f"its nearest upstreams with a domain disagree ({names}): a person must choose"
        ups = ", ".join(x.label for x in placed[:3])
        return Change("set_domain", (found[0],)), (
            f"lineage: upstream {ups} {'is' if len(placed) == 1 else 'are'} in "
            f"{ctx.display(found[0])}",
        )
    return None


def infer_assertions(
    a: AssetFacts, need: int, sla: float | None
) -> tuple[Change, tuple[str, ...]] | None:
    templates = ["row_count_above_zero"]
    if sla:
        templates.append(f"freshness_within_{sla:g}h")
    keys = [c.path for c in a.columns if c.path.lower() == "id" or c.path.lower().endswith("_id")]
    templates += [f"not_null:{k}" for k in keys[:1]]
    have = {x.kind.removeprefix("upstream:") for x in a.assertions}
    fresh = [t for t in templates if t not in have][:need]
    if len(fresh) < need:
        return None
    return Change("add_assertions", tuple(fresh)), (
        f"templates over the schema ({len(a.columns)} fields)",
    )


def _infer(
    ctx: MetadataContext,
    spec: EstateSpec,
    r: CheckResult,
    authors: Mapping[str, str] | None,
    runnable: frozenset[str] | None = None,
) -> tuple[Change, tuple[str, ...]] | str:
    a = ctx.by_urn[r.asset]
    req = next(t for t in spec.tiers if t.name == r.tier).requirements
    found: Found | str | None = None
    if r.requirement == "require_owner":
        found = infer_owner(ctx, a, authors)
        reason = (
            "no owned neighbour or upstream, none in its domain, no git history: nobody in the "
            "graph to name"
        )
    elif r.requirement == "require_description":
        found = infer_description(a, ctx.label)
        reason = "no columns and no upstreams to describe it from"
    elif r.requirement == "require_glossary_term":
        found = infer_term(ctx, a)
        reason = "no term on its columns or on a single-term upstream"
    elif r.requirement == "require_domain":
        found = infer_domain(ctx, a)
        reason = "no upstream with a single domain"
    elif r.requirement == "min_assertions":
        running = sum(1 for x in a.assertions if ran(x, req, ctx.as_of_ms))
        if runnable is not None and a.urn not in runnable:
            reason = (
                "no warehouse Upstream can reach holds this relation, so nothing would run a "
                "proposed assertion: a definition nothing evaluates is not coverage"
            )
        else:
            found = infer_assertions(a, req.min_assertions - running, req.freshness_sla_hours)
            reason = "not enough deterministic assertion templates apply to this schema"
    else:
        reason = NO_SOURCE.get(r.requirement, "no source in the graph")
    return found if found is not None else reason


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
    downstream = [u for u in _walk(ctx, p.asset, "downstreams")]
    tiers = dict((r.asset, r.tier) for r in base.results)
    return Price(
        round(after.overall.percent - base.overall.percent, 2),
        fixed,
        broken,
        len(downstream),
        sum(1 for d in downstream if tiers.get(d.urn) in top_tiers),
    )


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
    candidates: list[Proposal] = []
    unfixable: list[Unfixable] = []
    for v in rank_violations(ctx, spec, base.results, now_ms):
        r = v.check
        found = _infer(ctx, spec, r, authors, runnable)
        if isinstance(found, str):
            unfixable.append(Unfixable(r.asset, r.tier, r.requirement, found))
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
                )
            )
            continue
        candidates.append(
            Proposal(pid, r.asset, r.tier, r.requirement, change, evidence, v.risk.score)
        )
    priced, dropped = [], 0
    for p in candidates:
        price = _price(base, simulate(ctx, spec, (p,), now_ms), ctx, p, top)
        if price.checks_fixed == 0 and price.delta_points <= 0:
            dropped += 1
            continue
        priced.append(replace(p, price=price))
    priced.sort(key=lambda p: (-p.risk, -(p.price.delta_points if p.price else 0), p.id))
    batch = tuple(priced[: spec.policies.max_proposals_per_run])
    projected = simulate(ctx, spec, batch, now_ms)
    digest = batch_digest(batch, base.overall.percent)
    deferred = len(priced) - len(batch)
    mentioned = {v for p in batch for v in p.change.values if v in ctx.name_of}
    labels = {p.asset: ctx.label(p.asset) for p in batch}
    names = tuple(sorted({**{v: ctx.name_of[v] for v in mentioned}, **labels}.items()))
    return Plan(digest, base, projected, batch, tuple(unfixable), dropped, deferred, names)
