"""The pure core: one function per requirement, scoring per check, and risk with its arithmetic.
Plain pytest over frozen facts: no Dagster, no DataHub."""

from __future__ import annotations

from dataclasses import replace

from upstream_dagster.conformance.context import (
    AssertionFact,
    AssetFacts,
    Column,
    IncidentFact,
    MetadataContext,
)
from upstream_dagster.conformance.requirements import CHECKS, evaluate
from upstream_dagster.conformance.risk import WEIGHTS, RiskModel, rank_violations
from upstream_dagster.conformance.score import render, render_markdown, score
from upstream_dagster.conformance.tiers import Scope, SelectorHit
from upstream_dagster.spec.models import MODIFIERS, EstateSpec, Requirements

HOUR = 3_600_000
NOW = 1_800_000_000_000
A = "urn:li:dataset:(urn:li:dataPlatform:dbt,acme.marts.fct_ledger,PROD)"
B = "urn:li:dataset:(urn:li:dataPlatform:dbt,acme.staging.stg_ledger,PROD)"
DASH = "urn:li:dashboard:(looker,ledger)"

ALL = Requirements(
    require_owner=True,
    require_description=True,
    require_glossary_term=True,
    require_domain=True,
    require_tags=["pii"],
    min_assertions=2,
    freshness_sla_hours=24,
    max_open_incident_hours=12,
    required_structured_properties=["retentionDays"],
)


def good() -> AssetFacts:
    return AssetFacts(
        urn=A,
        name="acme.marts.fct_ledger",
        owners=("urn:li:corpuser:ana",),
        description="Ledger lines.",
        terms=("urn:li:glossaryTerm:Revenue",),
        domains=("urn:li:domain:finance",),
        tags=("urn:li:tag:pii",),
        assertions=(
            AssertionFact("urn:li:assertion:1", "dbt", None, "SUCCESS", NOW),
            AssertionFact("urn:li:assertion:2", "dbt", None, "SUCCESS", NOW),
        ),
        last_updated_ms=NOW - 2 * HOUR,
        last_updated_source="last successful dbt run",
        structured_properties=(("urn:li:structuredProperty:retentionDays", ("30",)),),
        twins=("urn:li:dataset:(urn:li:dataPlatform:snowflake,acme.marts.fct_ledger,PROD)",),
    )


def statuses(asset: AssetFacts) -> dict[str, str]:
    return {r.requirement: r.status for r in evaluate(asset, "gold", ALL, NOW)}


def test_every_requirement_has_one_function_and_a_good_asset_passes_all() -> None:
    # a modifier (accept_generated_descriptions) qualifies a requirement and is not one
    assert set(CHECKS) == set(Requirements.model_fields) - MODIFIERS
    assert set(statuses(good()).values()) == {"pass"}


def test_an_empty_asset_fails_with_reasons_and_freshness_is_not_evaluable() -> None:
    bare = AssetFacts(urn=A, columns=(Column("amount", terms=("urn:li:glossaryTerm:Revenue",)),))
    results = {r.requirement: r for r in evaluate(bare, "gold", ALL, NOW)}
    assert results["freshness_sla_hours"].status == "not_evaluable"
    assert "no update time" in results["freshness_sla_hours"].reason
    assert results["require_owner"].reason == "no owner in DataHub"
    assert "columns carry Revenue" in results["require_glossary_term"].reason
    assert results["min_assertions"].reason == "0 assertions ran within 24h, needs 2"
    assert results["max_open_incident_hours"].status == "pass"  # no incidents is a real pass


def test_min_assertions_counts_only_assertions_that_ran_within_the_window() -> None:
    never = AssertionFact("urn:li:assertion:3", "upstream:row_count_above_zero", None, None, None)
    stale = AssertionFact("urn:li:assertion:4", "dbt", None, "SUCCESS", NOW - 30 * HOUR)
    failed = AssertionFact("urn:li:assertion:5", "dbt", None, "FAILURE", NOW - HOUR)
    errored = AssertionFact("urn:li:assertion:6", "dbt", None, "ERROR", NOW - HOUR)
    on_paper = replace(good(), assertions=(never, stale, errored))
    result = {r.requirement: r for r in evaluate(on_paper, "gold", ALL, NOW)}["min_assertions"]
    assert result.status == "fail"
    assert result.reason == "0 assertions ran within 24h, needs 2; 3 defined but not run within 24h"
    # a failing run is still a check that runs; no window when the tier sets no SLA
    running = replace(good(), assertions=(failed, good().assertions[0]))
    assert statuses(running)["min_assertions"] == "pass"
    no_sla = ALL.model_copy(update={"freshness_sla_hours": None})
    assert {r.requirement: r.status for r in evaluate(on_paper, "gold", no_sla, NOW)}[
        "min_assertions"
    ] == "fail"  # the stale one counts, the never-run and the errored do not: 1 < 2


def test_the_dial_names_assertion_definitions_that_never_ran() -> None:
    never = AssertionFact("urn:li:assertion:3", "upstream:row_count_above_zero", None, None, None)
    a = replace(good(), assertions=(*good().assertions, never))
    scope = Scope(tier_of=((A, "gold"),), selector_hits=(), unmatched=())
    dial = score(ctx_of(a), spec(), scope, NOW)
    assert dial.never_ran == 1
    assert "1 assertion definition(s) on scored assets never ran" in render(dial)


def test_freshness_and_incident_age_read_the_clock_passed_in() -> None:
    stale = replace(good(), last_updated_ms=NOW - 30 * HOUR)
    assert statuses(stale)["freshness_sla_hours"] == "fail"
    incident = IncidentFact("urn:li:incident:1", "ACTIVE", NOW - 13 * HOUR)
    late = replace(good(), incidents=(incident,))
    assert statuses(late)["max_open_incident_hours"] == "fail"
    resolved = replace(good(), incidents=(replace(incident, state="RESOLVED"),))
    assert statuses(resolved)["max_open_incident_hours"] == "pass"


def ctx_of(*assets: AssetFacts) -> MetadataContext:
    return MetadataContext(as_of_ms=NOW, transport="test", assets=assets)


def spec() -> EstateSpec:
    return EstateSpec.model_validate(
        {
            "tiers": [
                {
                    "name": "gold",
                    "match": [{"names": ["fct_*"]}],
                    "requirements": {"require_owner": True, "require_description": True},
                },
                {
                    "name": "silver",
                    "match": [{"names": ["stg_*"]}],
                    "requirements": {"require_owner": True, "freshness_sla_hours": 1},
                },
            ]
        }
    )


def test_scoring_is_per_check_and_a_twin_counts_once() -> None:
    ctx = ctx_of(good(), AssetFacts(urn=B, name="acme.staging.stg_ledger", downstreams=(A,)))
    scope = Scope(
        tier_of=((A, "gold"), (B, "silver")),
        selector_hits=(SelectorHit("gold", 0, 1), SelectorHit("silver", 0, 1)),
        unmatched=(),
    )
    dial = score(ctx, spec(), scope, NOW)
    assert dict(dial.by_tier)["gold"].checks == 2  # one asset, two checks: the twin is not a 3rd
    silver = dict(dial.by_tier)["silver"]
    assert (silver.checks, silver.passed, silver.not_evaluable) == (2, 0, 1)
    assert (dial.overall.checks, dial.overall.passed) == (4, 2)
    assert dial.overall.percent == 50.0
    text = render(dial)
    assert "overall" in text and "1 not evaluable" in text and text == render(dial)
    assert "Nothing was scored" not in text and "match no dataset" not in text


def test_a_dial_with_nothing_scored_shows_no_percentage_and_names_the_empty_selectors() -> None:
    ctx = ctx_of(good())
    scope = Scope(
        tier_of=(),
        selector_hits=(SelectorHit("gold", 0, 0, "names: fct_*"), SelectorHit("silver", 0, 0)),
        unmatched=(A,),
    )
    dial = score(ctx, spec(), scope, NOW)
    text = render(dial)
    overall = next(line for line in text.splitlines() if line.startswith("overall"))
    assert overall.split()[-1] == "n/a" and "0.0%" not in text
    assert "Nothing was scored" in text and "(1 datasets seen, none selected)" in text
    assert "gold match[0] (names: fct_*); silver match[0]" in text
    assert "| n/a |" in render_markdown(dial) and "Nothing was scored" in render_markdown(dial)


def test_risk_weights_sum_to_one_and_explain_shows_missing_history_as_not_evaluable() -> None:
    assert round(sum(w for _, w in WEIGHTS), 6) == 1.0
    bare_a = AssetFacts(urn=A, name="acme.marts.fct_ledger", upstreams=(B,), downstreams=(DASH,))
    bare_b = AssetFacts(urn=B, name="acme.staging.stg_ledger", downstreams=(A,))
    dash = AssetFacts(urn=DASH, entity_type="dashboard", upstreams=(A,))
    ctx = ctx_of(bare_a, bare_b, dash)
    scope = Scope(tier_of=((A, "gold"), (B, "silver")), selector_hits=(), unmatched=())
    dial = score(ctx, spec(), scope, NOW)
    ranked = rank_violations(ctx, spec(), dial.results, NOW)
    assert ranked[0].check.asset == A  # first tier, feeds a dashboard: riskier
    explained = ranked[0].risk.explain()
    assert "fragility n/a (no incident history in DataHub yet)" in explained
    assert "1 dashboards downstream" in explained
    model = RiskModel(ctx, spec(), dial.results, NOW)
    assert model.depth[A] == 1 and model.consumers(B) == 1 and model.fanout(B) == 2


def test_criticality_is_what_estate_yaml_declares_never_the_order_of_tiers() -> None:
    a = AssetFacts(urn=A, name="acme.marts.fct_ledger")
    b = AssetFacts(urn=B, name="acme.staging.stg_ledger")
    ctx = ctx_of(a, b)
    scope = Scope(tier_of=((A, "gold"), (B, "silver")), selector_hits=(), unmatched=())

    def criticality(estate: EstateSpec) -> dict[str, float | None]:
        dial = score(ctx, estate, scope, NOW)
        model = RiskModel(ctx, estate, dial.results, NOW)
        return {
            urn: {t.name: t.value for t in model.risk(r).terms}["criticality"]
            for urn, r in ((r.asset, r) for r in dial.results)
        }

    undeclared = criticality(spec())
    assert undeclared[A] == undeclared[B]  # first in the file is not "more critical"
    assert spec().critical_tiers == set()

    raw = spec().model_dump()
    raw["tiers"][0]["criticality"] = 0.2  # gold, first in the file
    raw["tiers"][1]["criticality"] = 1.0  # silver, declared the critical one
    declared = EstateSpec.model_validate(raw)
    values = criticality(declared)
    assert values[B] is not None and values[A] is not None and values[B] > values[A]
    assert declared.critical_tiers == {"silver"}


def test_a_criticality_outside_zero_to_one_is_refused() -> None:
    import pydantic
    import pytest

    raw = spec().model_dump()
    raw["tiers"][0]["criticality"] = 2
    with pytest.raises(pydantic.ValidationError, match="criticality"):
        EstateSpec.model_validate(raw)


def test_risk_uses_incident_history_once_it_exists() -> None:
    incident = IncidentFact("urn:li:incident:1", "RESOLVED", NOW - 24 * HOUR)
    a = AssetFacts(urn=A, name="acme.marts.fct_ledger", incidents=(incident,))
    ctx = ctx_of(a)
    scope = Scope(tier_of=((A, "gold"),), selector_hits=(), unmatched=())
    dial = score(ctx, spec(), scope, NOW)
    risk = rank_violations(ctx, spec(), dial.results, NOW)[0].risk
    terms = {t.name: t for t in risk.terms}
    assert terms["fragility"].value is not None and terms["fragility"].value > 0.9
    assert terms["similarity"].value == 1.0


def test_planning_cites_git_history_and_column_lineage_when_nothing_nearer_exists() -> None:
    from upstream_dagster.conformance.plan import plan

    up = AssetFacts(
        urn=B,
        name="acme.staging.stg_ledger",
        downstreams=(A,),
        columns=(Column("amount", terms=("urn:li:glossaryTerm:Money",)),),
    )
    down = AssetFacts(
        urn=A,
        name="acme.marts.fct_ledger",
        upstreams=(B,),
        columns=(Column("amount"),),
        properties=(("dbt_file_path", "models/marts/fct_ledger.sql"),),
    )
    ctx = replace(
        ctx_of(up, down),
        column_edges=((f"urn:li:schemaField:({B},amount)", f"urn:li:schemaField:({A},amount)"),),
    )
    estate = EstateSpec.model_validate(
        {
            "tiers": [
                {
                    "name": "gold",
                    "match": [{"names": ["fct_*"]}],
                    "requirements": {"require_owner": True, "require_glossary_term": True},
                }
            ],
            "policies": {"approvers": ["ana"]},
        }
    )
    without = plan(ctx, estate, NOW)
    assert {u.requirement for u in without.unfixable} == {"require_owner"}
    result = plan(ctx, estate, NOW, authors={"models/marts/fct_ledger.sql": "ana"})
    by_req = {p.requirement: p for p in result.proposals}
    assert by_req["require_owner"].change.values == ("urn:li:corpuser:ana",)
    assert by_req["require_owner"].evidence[0].startswith("git: ana")
    assert by_req["require_glossary_term"].change.values == ("urn:li:glossaryTerm:Money",)
    assert "column lineage" in by_req["require_glossary_term"].evidence[0]
    assert result.projected.overall.percent == 100.0


def test_downstream_counts_match_a_walk_of_the_lineage_on_random_graphs() -> None:
    """The risk model counts what lies downstream without keeping every transitive set: on
    random lineage (fan-in, fan-out, diamonds, a cycle, edges to assets DataHub does not hold)
    each count equals a plain walk's."""
    import random

    for seed in range(30):
        rng = random.Random(seed)
        n = rng.randint(2, 40)
        urns = [
            f"urn:li:dashboard:(looker,d{i})" if rng.random() < 0.2 else f"{A[:-6]}{i},PROD)"
            for i in range(n)
        ]
        downs: dict[str, set[str]] = {u: set() for u in urns}
        for i, u in enumerate(urns):
            for j in rng.sample(range(n), k=min(n, rng.randint(0, 3))):
                if j > i or rng.random() < 0.05:  # mostly a DAG, now and then a cycle
                    downs[u].add(
                        urns[j] if j != i else "urn:li:dataset:(urn:li:dataPlatform:x,gone,PROD)"
                    )
        ups: dict[str, set[str]] = {u: set() for u in urns}
        for u, ds in downs.items():
            for d in ds:
                if d in ups:
                    ups[d].add(u)
        ctx = ctx_of(
            *(
                AssetFacts(
                    urn=u,
                    entity_type="dashboard" if "dashboard" in u else "dataset",
                    upstreams=tuple(sorted(ups[u])),
                    downstreams=tuple(sorted(downs[u])),
                )
                for u in urns
            )
        )
        model = RiskModel(ctx, spec(), (), NOW)
        acyclic = all(urns.index(d) > urns.index(u) for u in urns for d in downs[u] if d in ups)
        for u in urns:
            seen, stack = set(), list(downs[u])
            while stack:
                d = stack.pop()
                if d not in seen:
                    seen.add(d)
                    stack.extend(downs.get(d, ()))
            if acyclic:  # in a cycle the depth order, not a walk, decides what is counted
                assert model.fanout(u) == len(seen), (seen, u)
                assert model.consumers(u) == sum(1 for d in seen if "dashboard" in d)
