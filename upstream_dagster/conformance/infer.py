"""One inference per requirement: a change with the evidence for it, or why there is none.

An abstention names the rule that looked and what it found, so a remaining violation says its
own reason (a tie between two named owners, a container where nobody owns anything, SQL that
only carries columns), never a blanket "nothing to infer from".
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from upstream_dagster.conformance.carry import Carry
from upstream_dagster.conformance.context import AssetFacts, MetadataContext
from upstream_dagster.conformance.describe import Described, describe, inherited
from upstream_dagster.conformance.proposals import Change
from upstream_dagster.conformance.requirements import DETECT_COMMAND, CheckResult, detected_by, ran
from upstream_dagster.conformance.stewardship import decide
from upstream_dagster.spec.models import EstateSpec
from upstream_dagster.spec.urns import field_dataset, field_path

Found = tuple[Change, tuple[str, ...]]
NO_SOURCE = {
    "require_tags": "no rule infers a tag: a tag records a decision a person makes",
    "freshness_sla_hours": "freshness is restored by running the pipeline, not by metadata",
    "max_open_incident_hours": "an open incident is closed by resolving it, not by metadata",
    "required_structured_properties": "nothing in the graph records this value (e.g. a "
    "retention period); a person must set it",
}


def walk(ctx: MetadataContext, start: str, direction: str) -> Iterator[AssetFacts]:
    """Assets in lineage order, nearest first (breadth-first), the start excluded."""
    seen, queue = {start}, deque([start])
    while queue:
        for nxt in getattr(ctx.by_urn[queue.popleft()], direction):
            if nxt not in seen and nxt in ctx.by_urn:
                seen.add(nxt)
                queue.append(nxt)
                yield ctx.by_urn[nxt]


@dataclass(frozen=True)
class Abstain:
    """No proposal: why (the rule that decided there is none), and what each rule found."""

    reason: str
    looked: tuple[str, ...] = ()


def infer_owner(
    ctx: MetadataContext, carry: Carry, a: AssetFacts, authors: Mapping[str, str] | None = None
) -> Found | Abstain:
    """Owners from the graph (see `stewardship`), else the person with most commits to the
    asset's dbt model file. A tie is no proposal."""
    d = decide(ctx, carry, a, "owners", single=False)
    if d.values:
        return Change("add_owner", d.values), d.evidence
    if d.tie:
        return Abstain(
            f"owners: {d.tied} and no later rule breaks the tie: a person chooses", d.looked
        )
    path = dict(a.properties).get("dbt_file_path", "")
    author = (authors or {}).get(path)
    if author:
        return Change("add_owner", (f"urn:li:corpuser:{author}",)), (
            f"git: {author} made the most commits to {path}",
        )
    git = f"git: no author known for {path}" if path else "git: not a dbt model"
    return Abstain(
        f"owners: none of the {d.looked_at} assets the rules looked at has an owner, and "
        + ("no git author is known" if path else "it is not a dbt model with git history"),
        (*d.looked, git),
    )


def infer_domain(ctx: MetadataContext, carry: Carry, a: AssetFacts) -> Found | Abstain:
    """One domain from the graph (see `stewardship`); assets that disagree are no proposal."""
    d = decide(ctx, carry, a, "domains", single=True)
    if d.values:
        return Change("set_domain", d.values), d.evidence
    if d.tie:
        return Abstain(
            f"domains: {d.tied} and no later rule breaks the tie: a person chooses", d.looked
        )
    return Abstain(
        f"domains: none of the {d.looked_at} assets the rules looked at is in a domain",
        d.looked,
    )


def infer_description(
    ctx: MetadataContext, carry: Carry, a: AssetFacts, accepts_generated: bool
) -> Found | Abstain:
    found = describe(ctx, carry, a)
    if not isinstance(found, Described):
        return Abstain("description: nothing to describe it from", found)
    if found.generated and not accepts_generated:
        return Abstain(
            "description: only a generated restatement is possible, and this tier does not "
            "count generated text (accept_generated_descriptions is off)",
            (*found.looked, f"generated would read: {_clip(found.text, 200)}"),
        )
    return Change("set_description", (found.text,), found.columns), found.evidence


def infer_columns(ctx: MetadataContext, carry: Carry, a: AssetFacts) -> Found | None:
    """Descriptions for the undocumented columns that carry a documented one unchanged, on an
    asset whose own description needs nothing: DataHub's documentation propagation and
    dbt-osmosis document a carried column whatever its table says. None: nothing to carry."""
    columns, evidence = inherited(ctx, carry, a)
    if not columns:
        return None
    flat = tuple(x for pair in columns for x in pair)
    return Change("set_column_descriptions", flat), (
        *evidence,
        "column documentation is not a scored requirement: it moves no check on the dial",
    )


def _clip(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 3] + "..."


def infer_term(ctx: MetadataContext, a: AssetFacts) -> Found | Abstain:
    column_terms = Counter(t for c in a.columns for t in c.terms)
    if column_terms:
        term = min(column_terms, key=lambda t: (-column_terms[t], t))
        cols = [c.path for c in a.columns if term in c.terms]
        return Change("add_term", (term,)), (
            f"columns {', '.join(cols[:3])} carry {ctx.display(term)}",
        )
    feeding = {u for u, d in ctx.column_edges if d.startswith(f"urn:li:schemaField:({a.urn},")}
    for field in sorted(feeding):  # terms on the upstream columns that feed this asset's
        source = ctx.by_urn.get(field_dataset(field) or "")
        path = field_path(field)
        column_terms.update(
            t for c in (source.columns if source else ()) if c.path == path for t in c.terms
        )
    if column_terms:
        term = min(column_terms, key=lambda t: (-column_terms[t], t))
        return Change("add_term", (term,)), (
            f"column lineage: upstream columns feeding it carry {ctx.display(term)}",
        )
    for up in walk(ctx, a.urn, "upstreams"):
        if len(up.terms) == 1:
            return Change("add_term", up.terms), (
                f"lineage: upstream {up.label} carries {ctx.display(up.terms[0])}",
            )
    many = [ctx.label(u) for u in a.upstreams if u in ctx.by_urn and ctx.by_urn[u].terms]
    return Abstain(
        "glossary term: no term on its columns, the columns feeding them, or a single-term "
        "upstream",
        (f"upstreams with several terms: {', '.join(many[:3])}" if many else "upstreams: no term",),
    )


def infer_assertions(a: AssetFacts, need: int, sla: float | None) -> Found | Abstain:
    templates = ["row_count_above_zero"]
    if sla:
        templates.append(f"freshness_within_{sla:g}h")
    keys = [c.path for c in a.columns if c.path.lower() == "id" or c.path.lower().endswith("_id")]
    templates += [f"not_null:{k}" for k in keys[:1]]
    have = {x.kind.removeprefix("upstream:") for x in a.assertions}
    fresh = [t for t in templates if t not in have][:need]
    if len(fresh) < need:
        return Abstain(
            f"assertions: {len(fresh)} deterministic template(s) apply to this schema, "
            f"{need} needed",
            (f"templates: {', '.join(templates)}; already defined: {', '.join(sorted(have))}",),
        )
    return Change("add_assertions", tuple(fresh)), (
        f"templates over the schema ({len(a.columns)} fields)",
    )


def infer_detection(a: AssetFacts) -> Found | Abstain:
    """The fewest assertions that would have caught the faults that slipped through, each
    already tried on the fault in the sandbox (`upstream detect`): greedily, the one that
    catches the most of those left."""
    if a.fault_trials is None:
        return Abstain(f"fault detection: not measured; run `{DETECT_COMMAND}` first")
    missed = [t for t in a.fault_trials if not detected_by(a, t)]
    chosen: list[str] = []
    left = list(missed)
    while left:
        counts = Counter(w for t in left for w in t.would_catch)
        if not counts:
            break
        best = min(counts, key=lambda w: (-counts[w], w))
        chosen.append(best)
        left = [t for t in left if best not in t.would_catch]
    if not chosen:
        return Abstain(
            "fault detection: no assertion Upstream runs (rows present, freshness, never NULL, "
            "unique, accepted values, value range) failed on what slipped through; a dbt test "
            "or a monitor must",
            tuple(f"missed: {t.fault}" for t in missed),
        )
    n, caught = len(a.fault_trials), len(a.fault_trials) - len(missed)
    after = caught + len(missed) - len(left)
    evidence = (
        f"tried in the sandbox: {after} of {n} faults caught with them (now {caught})",
        *(f"{w} fails on: {t.fault}" for w in chosen for t in missed if w in t.would_catch),
        *(f"still missed: {t.fault}" for t in left),
    )
    return Change("add_assertions", tuple(chosen)), evidence


def infer(
    ctx: MetadataContext,
    carry: Carry,
    spec: EstateSpec,
    r: CheckResult,
    authors: Mapping[str, str] | None,
    runnable: frozenset[str] | None = None,
) -> Found | Abstain:
    a = ctx.by_urn[r.asset]
    req = next(t for t in spec.tiers if t.name == r.tier).requirements
    if r.requirement == "require_owner":
        return infer_owner(ctx, carry, a, authors)
    if r.requirement == "require_description":
        return infer_description(ctx, carry, a, req.accept_generated_descriptions)
    if r.requirement == "require_glossary_term":
        return infer_term(ctx, a)
    if r.requirement == "require_domain":
        return infer_domain(ctx, carry, a)
    if r.requirement == "min_fault_detection":
        if runnable is not None and a.urn not in runnable:
            return Abstain(
                "fault detection: no warehouse Upstream can reach holds this relation, so "
                "nothing would run a proposed assertion"
            )
        return infer_detection(a)
    if r.requirement == "min_assertions":
        if runnable is not None and a.urn not in runnable:
            return Abstain(
                "assertions: no warehouse Upstream can reach holds this relation, so nothing "
                "would run a proposed assertion: a definition nothing evaluates is not coverage"
            )
        running = sum(1 for x in a.assertions if ran(x, req, ctx.as_of_ms))
        return infer_assertions(a, req.min_assertions - running, req.freshness_sla_hours)
    return Abstain(
        f"{r.requirement}: {r.reason}; {NO_SOURCE.get(r.requirement, 'no rule infers it')}"
    )
