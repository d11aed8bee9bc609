"""Scoring per check, not per asset: per tier, per requirement, and overall.

A check that cannot be evaluated counts as a check that did not pass (a requirement nobody can
demonstrate is not met) and is shown in its own column, never folded into a silent zero.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from upstream_dagster.conformance import detection
from upstream_dagster.conformance.context import MetadataContext
from upstream_dagster.conformance.requirements import CheckResult, evaluate, is_generated
from upstream_dagster.conformance.tiers import Scope, SelectorHit
from upstream_dagster.spec.models import EstateSpec
from upstream_dagster.spec.urns import short


@dataclass(frozen=True)
class Tally:
    assets: int
    checks: int
    passed: int
    not_evaluable: int

    @property
    def percent(self) -> float:
        return round(100.0 * self.passed / self.checks, 2) if self.checks else 0.0


@dataclass(frozen=True)
class Descriptions:
    documented: int
    generated: int
    missing: int

    def line(self) -> str:
        return (
            f"descriptions: {self.documented} documented, {self.generated} generated "
            f"restatements (labelled; counted only where a tier accepts generated text), "
            f"{self.missing} missing"
        )


@dataclass(frozen=True)
class Dial:
    as_of_ms: int
    by_tier: tuple[tuple[str, Tally], ...]
    by_requirement: tuple[tuple[str, Tally], ...]
    overall: Tally
    results: tuple[CheckResult, ...]
    unmatched: tuple[str, ...]
    selector_hits: tuple[SelectorHit, ...] = ()
    # Assertion definitions on scored assets that never ran: none of them counts
    never_ran: int = 0
    # Of the scored assets asked for a description: documented (a person's text, or Upstream's
    # grounded in what the graph and the SQL say), a restatement Upstream generated (labelled;
    # counted only where the tier accepts it), none at all
    descriptions: Descriptions = field(default_factory=lambda: Descriptions(0, 0, 0))

    def failures(self) -> tuple[CheckResult, ...]:
        return tuple(r for r in self.results if r.status != "pass")


def _tally(results: Iterable[CheckResult]) -> Tally:
    rows = list(results)
    return Tally(
        assets=len({r.asset for r in rows}),
        checks=len(rows),
        passed=sum(r.status == "pass" for r in rows),
        not_evaluable=sum(r.status == "not_evaluable" for r in rows),
    )


def score(ctx: MetadataContext, spec: EstateSpec, scope: Scope, now_ms: int) -> Dial:
    tiers = {t.name: t for t in spec.tiers}
    results: list[CheckResult] = []
    for urn, tier in scope.tier_of:
        asset = ctx.by_urn.get(urn)
        if asset is not None:
            results.extend(evaluate(asset, tier, tiers[tier].requirements, now_ms))
    results.sort(key=lambda r: (r.tier, r.asset, r.requirement))
    scored = {r.asset for r in results}
    never_ran = sum(
        1 for a in ctx.assets if a.urn in scored for x in a.assertions if x.last_run_ms is None
    )
    texts = [
        ctx.by_urn[r.asset].description for r in results if r.requirement == "require_description"
    ]
    described = Descriptions(
        sum(1 for t in texts if t and not is_generated(t)),
        sum(1 for t in texts if is_generated(t)),
        sum(1 for t in texts if not t),
    )
    by_tier: dict[str, list[CheckResult]] = defaultdict(list)
    by_req: dict[str, list[CheckResult]] = defaultdict(list)
    for r in results:
        by_tier[r.tier].append(r)
        by_req[r.requirement].append(r)
    tier_rows = tuple((t.name, _tally(by_tier.get(t.name, []))) for t in spec.tiers)
    req_order = [name for t in spec.tiers for name in t.requirements.active()]
    req_rows = tuple((name, _tally(by_req[name])) for name in dict.fromkeys(req_order))
    return Dial(
        as_of_ms=now_ms,
        by_tier=tier_rows,
        by_requirement=req_rows,
        overall=_tally(results),
        results=tuple(results),
        unmatched=scope.unmatched,
        selector_hits=scope.selector_hits,
        never_ran=never_ran,
        descriptions=described,
    )


def _percent(t: Tally) -> str:
    """A tally with no checks has no percentage: 'n/a', never a 0% that reads as failing."""
    return f"{t.percent:.1f}%" if t.checks else "n/a"


def _row(label: str, t: Tally, width: int) -> str:
    ne = f"  {t.not_evaluable:>3} not evaluable" if t.not_evaluable else ""
    return (
        f"{label:<{width}} {t.assets:>5} assets {t.checks:>6} checks {t.passed:>6} passed "
        f"{_percent(t):>7}{ne}"
    )


def warnings(dial: Dial) -> list[str]:
    """What a reader must know before trusting the dial: nothing scored, selectors that match
    nothing (usually a typo in a tag, domain or name pattern)."""
    out = []
    empty = [h.name() for h in dial.selector_hits if not h.matched]
    if not dial.overall.checks:
        seen = len(dial.unmatched)
        out.append(
            "Nothing was scored: no dataset in DataHub matches a tier of estate.yaml"
            + (f" ({seen} datasets seen, none selected)." if seen else " (DataHub holds none).")
            + " Fix: point the tiers' selectors (names, platforms, tags, domains, terms, owners)"
            " at this estate's datasets."
        )
    if dial.never_ran:
        out.append(
            f"{dial.never_ran} assertion definition(s) on scored assets never ran: a definition "
            "nothing evaluates does not count toward min_assertions. Fix: run it (dbt test, a "
            "monitor, Upstream's build checks) or remove it."
        )
    if empty:
        out.append(
            f"{len(empty)} selector(s) match no dataset (check the tag, domain, term or name "
            f"pattern): {'; '.join(empty)}"
        )
    return out


def render(dial: Dial) -> str:
    """The dial as plain text: identical bytes for identical inputs, on every machine."""
    width = max([len(n) for n, _ in dial.by_tier + dial.by_requirement] + [len("overall")])
    lines = [_row(name, tally, width) for name, tally in dial.by_tier]
    lines.append(_row("overall", dial.overall, width))
    lines.append("")
    lines.append("by requirement")
    lines.extend(_row(name, tally, width) for name, tally in dial.by_requirement)
    if any(n == "require_description" for n, _ in dial.by_requirement):
        lines.append(dial.descriptions.line())
    found = detection.lines(dial.results)
    if found:
        lines.append("")
        lines.extend(found)
    notes = warnings(dial)
    if notes:
        lines.append("")
        lines.extend(notes)
    if dial.unmatched:
        lines.append("")
        lines.append(
            f"{len(dial.unmatched)} datasets match no tier (not scored): "
            + ", ".join(short(u) for u in dial.unmatched[:8])
            + (" ..." if len(dial.unmatched) > 8 else "")
        )
    return "\n".join(lines) + "\n"


def render_markdown(dial: Dial) -> str:
    head = (
        "| | assets | checks | passed | not evaluable | percent |\n|---|---:|---:|---:|---:|---:|\n"
    )

    def rows(items: Iterable[tuple[str, Tally]]) -> str:
        return "".join(
            f"| {n} | {t.assets} | {t.checks} | {t.passed} | {t.not_evaluable} | {_percent(t)} |\n"
            for n, t in items
        )

    overall = rows([("**overall**", dial.overall)])
    text = "### By tier\n\n" + head + rows(dial.by_tier) + overall
    text += "\n### By requirement\n\n" + head + rows(dial.by_requirement)
    if any(n == "require_description" for n, _ in dial.by_requirement):
        text += f"\n{dial.descriptions.line()}\n"
    text += detection.markdown(dial.results)
    for note in warnings(dial):
        text += f"\n**{note}**\n"
    if dial.unmatched:
        text += f"\n{len(dial.unmatched)} datasets match no tier and are not scored.\n"
    return text
