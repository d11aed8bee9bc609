"""One pure function per requirement: pass, fail, or not evaluable, with reason and evidence.

Facts come from what DataHub records (owners, docs, terms, assertion runs, dbt run events,
incidents), never from what a team declared. Time is read from the one clock, passed in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from upstream_dagster.conformance.context import AssertionFact, AssetFacts
from upstream_dagster.spec.models import Requirements
from upstream_dagster.spec.urns import short, to_urns

Status = Literal["pass", "fail", "not_evaluable"]
HOUR_MS = 3_600_000


@dataclass(frozen=True)
class CheckResult:
    asset: str
    tier: str
    requirement: str
    status: Status
    reason: str
    evidence: tuple[str, ...] = ()


Check = Callable[[AssetFacts, Requirements, int], tuple[Status, str, tuple[str, ...]]]


def _names(urns: tuple[str, ...]) -> str:
    return ", ".join(short(u) for u in urns)


def require_owner(a: AssetFacts, r: Requirements, now: int) -> tuple[Status, str, tuple[str, ...]]:
    if a.owners:
        return "pass", f"owned by {_names(a.owners)}", a.owners
    return "fail", "no owner in DataHub", ()


def require_description(
    a: AssetFacts, r: Requirements, now: int
) -> tuple[Status, str, tuple[str, ...]]:
    if a.description:
        return "pass", "documented", (a.description[:120],)
    return "fail", "no description in DataHub", ()


def require_glossary_term(
    a: AssetFacts, r: Requirements, now: int
) -> tuple[Status, str, tuple[str, ...]]:
    if a.terms:
        return "pass", f"terms {_names(a.terms)}", a.terms
    column_terms = tuple(sorted({t for c in a.columns for t in c.terms}))
    note = f" (columns carry {_names(column_terms)})" if column_terms else ""
    return "fail", f"no glossary term on the asset{note}", column_terms


def require_domain(a: AssetFacts, r: Requirements, now: int) -> tuple[Status, str, tuple[str, ...]]:
    if a.domains:
        return "pass", f"domain {_names(a.domains)}", a.domains
    return "fail", "no domain in DataHub", ()


def require_tags(a: AssetFacts, r: Requirements, now: int) -> tuple[Status, str, tuple[str, ...]]:
    missing = tuple(t for t in to_urns("tags", r.require_tags) if t not in a.tags)
    if missing:
        return "fail", f"missing tags {_names(missing)}", a.tags
    return "pass", f"has tags {_names(to_urns('tags', r.require_tags))}", a.tags


def ran(x: AssertionFact, r: Requirements, now: int) -> bool:
    """An assertion counts only if it runs: a result (pass or fail; ERROR is a run that could
    not look) within the tier's freshness window, or ever when the tier sets none. A definition
    nothing evaluates is coverage on paper."""
    if x.last_run_ms is None or x.last_result not in ("SUCCESS", "FAILURE"):
        return False
    window = r.freshness_sla_hours
    return window is None or now - x.last_run_ms <= window * HOUR_MS


def min_assertions(a: AssetFacts, r: Requirements, now: int) -> tuple[Status, str, tuple[str, ...]]:
    running = tuple(x for x in a.assertions if ran(x, r, now))
    evidence = tuple(x.urn for x in running)
    window = f" within {r.freshness_sla_hours:g}h" if r.freshness_sla_hours else ""
    idle = len(a.assertions) - len(running)
    note = f"; {idle} defined but not run{window}" if idle else ""
    n = len(running)
    if n >= r.min_assertions:
        return "pass", f"{n} assertions ran{window} (needs {r.min_assertions}){note}", evidence
    return "fail", f"{n} assertions ran{window}, needs {r.min_assertions}{note}", evidence


def freshness_sla_hours(
    a: AssetFacts, r: Requirements, now: int
) -> tuple[Status, str, tuple[str, ...]]:
    assert r.freshness_sla_hours is not None
    if a.last_updated_ms is None:
        return (
            "not_evaluable",
            "DataHub records no update time for this asset (no operation, "
            "last-modified, run event or freshness result)",
            (),
        )
    age_h = max(0, now - a.last_updated_ms) / HOUR_MS
    evidence = (f"{a.last_updated_source} at {a.last_updated_ms}",)
    if age_h <= r.freshness_sla_hours:
        return "pass", f"updated {age_h:.1f} h ago (SLA {r.freshness_sla_hours:g} h)", evidence
    return "fail", f"updated {age_h:.1f} h ago, SLA {r.freshness_sla_hours:g} h", evidence


def max_open_incident_hours(
    a: AssetFacts, r: Requirements, now: int
) -> tuple[Status, str, tuple[str, ...]]:
    assert r.max_open_incident_hours is not None
    limit = r.max_open_incident_hours * HOUR_MS
    open_ = [i for i in a.incidents if i.state != "RESOLVED"]
    late = [i for i in open_ if now - i.created_ms > limit]
    if late:
        oldest = max((now - i.created_ms) / HOUR_MS for i in late)
        return (
            "fail",
            f"{len(late)} incident(s) open longer than "
            f"{r.max_open_incident_hours:g} h (oldest {oldest:.1f} h)",
            tuple(i.urn for i in late),
        )
    if open_:
        return (
            "pass",
            f"{len(open_)} open incident(s), all younger than the limit",
            tuple(i.urn for i in open_),
        )
    return "pass", "no open incidents in DataHub", ()


def required_structured_properties(
    a: AssetFacts, r: Requirements, now: int
) -> tuple[Status, str, tuple[str, ...]]:
    present = {p for p, values in a.structured_properties if values}
    wanted = to_urns("structured_properties", r.required_structured_properties)
    missing = tuple(p for p in wanted if p not in present)
    if missing:
        return "fail", f"missing structured properties {_names(missing)}", tuple(sorted(present))
    return "pass", f"has {_names(wanted)}", wanted


CHECKS: dict[str, Check] = {
    "require_owner": require_owner,
    "require_description": require_description,
    "require_glossary_term": require_glossary_term,
    "require_domain": require_domain,
    "require_tags": require_tags,
    "min_assertions": min_assertions,
    "freshness_sla_hours": freshness_sla_hours,
    "max_open_incident_hours": max_open_incident_hours,
    "required_structured_properties": required_structured_properties,
}


def evaluate(asset: AssetFacts, tier: str, req: Requirements, now_ms: int) -> list[CheckResult]:
    results = []
    for name in req.active():
        status, reason, evidence = CHECKS[name](asset, req, now_ms)
        results.append(CheckResult(asset.urn, tier, name, status, reason, evidence))
    return results
