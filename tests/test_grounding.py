"""Issue 18, item 5: proposals grounded the way a steward would ground them (pure core)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from upstream_dagster.conformance.context import AssetFacts, Column, MetadataContext
from upstream_dagster.conformance.plan import infer_description, infer_domain, infer_owner, plan
from upstream_dagster.services.coverage import git_authors, is_person
from upstream_dagster.spec.models import EstateSpec

NOW = 1_800_000_000_000
GROUP = "urn:li:corpGroup:platform-team"
ANA = "urn:li:corpuser:ana"
BO = "urn:li:corpuser:bo"


def ds(name: str, platform: str = "dbt") -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:{platform},acme.{name},PROD)"


def graph(*assets: AssetFacts) -> MetadataContext:
    """Fill each asset's downstreams from the others' upstreams, as DataHub's lineage reads."""
    downs: dict[str, list[str]] = {}
    for a in assets:
        for u in a.upstreams:
            downs.setdefault(u, []).append(a.urn)
    from dataclasses import replace

    full = tuple(replace(a, downstreams=tuple(sorted(downs.get(a.urn, [])))) for a in assets)
    names = ((GROUP, "Platform team"), (ANA, "Ana Souza"), (BO, "Bo Chen"))
    return MetadataContext(as_of_ms=NOW, transport="test", assets=full, names=names)


def test_the_owner_most_neighbours_share_wins_over_the_first_owner_upstream() -> None:
    parent = AssetFacts(ds("raw.orders"), name="acme.raw.orders", owners=(GROUP,))
    siblings = [
        AssetFacts(
            ds(f"staging.s{i}"),
            name=f"acme.staging.s{i}",
            upstreams=(parent.urn,),
            owners=(ANA,),
            owner_types=((ANA, "TECHNICAL_OWNER"),),
        )
        for i in range(3)
    ]
    orphan = AssetFacts(ds("staging.orphan"), name="acme.staging.orphan", upstreams=(parent.urn,))
    ctx = graph(parent, *siblings, orphan)
    found = infer_owner(ctx, ctx.by_urn[orphan.urn])
    assert not isinstance(found, str) and found is not None
    change, evidence = found
    assert change.values == (ANA,)
    assert evidence[0] == (
        "neighbours: Ana Souza owns 3 of 4 owned as TECHNICAL_OWNER; "
        "alternatives: Platform team (1)"
    )


def test_a_tie_between_owners_is_no_proposal_and_says_who_is_tied() -> None:
    parent = AssetFacts(ds("raw.orders"), name="acme.raw.orders")
    a = AssetFacts(ds("staging.a"), upstreams=(parent.urn,), owners=(ANA,))
    b = AssetFacts(ds("staging.b"), upstreams=(parent.urn,), owners=(BO,))
    orphan = AssetFacts(ds("staging.orphan"), upstreams=(parent.urn,))
    ctx = graph(parent, a, b, orphan)
    found = infer_owner(ctx, ctx.by_urn[orphan.urn])
    assert found == "neighbours are split between Ana Souza, Bo Chen (1 each): a person must choose"


def test_no_domain_from_two_hops_away_when_the_parents_disagree() -> None:
    grand = AssetFacts(ds("raw.orders"), domains=("urn:li:domain:sales",))
    p1 = AssetFacts(ds("staging.p1"), upstreams=(grand.urn,), domains=("urn:li:domain:sales",))
    p2 = AssetFacts(ds("staging.p2"), upstreams=(grand.urn,), domains=("urn:li:domain:finance",))
    child = AssetFacts(ds("marts.child"), upstreams=(p1.urn, p2.urn))
    ctx = graph(grand, p1, p2, child)
    found = infer_domain(ctx, ctx.by_urn[child.urn])
    assert isinstance(found, str) and "disagree (finance, sales)" in found
    # a single-domain parent layer is a proposal, citing the parent by name and platform
    only = graph(grand, p1, AssetFacts(ds("marts.c2"), upstreams=(p1.urn,)))
    ok = infer_domain(only, only.by_urn[ds("marts.c2")])
    assert not isinstance(ok, str) and ok is not None
    assert ok[0].values == ("urn:li:domain:sales",) and "p1 (dbt)" in ok[1][0]


def test_descriptions_name_assets_as_datahub_shows_them_with_their_platform() -> None:
    feed = AssetFacts(
        "urn:li:dataset:(urn:li:dataPlatform:kafka,9f1c2ab0-77e1-4bd6,PROD)",
        platform="kafka",
        name="9f1c2ab0-77e1-4bd6",
        display_name="Order events",
    )
    table = AssetFacts(
        ds("marts.orders", "snowflake"),
        platform="snowflake",
        name="acme.marts.orders",
        display_name="Orders",
        upstreams=(feed.urn,),
        columns=(Column("order_id"),),
    )
    ctx = graph(feed, table)
    found = infer_description(ctx.by_urn[table.urn], ctx.label)
    assert found is not None
    text = found[0].values[0]
    assert text.startswith("Orders: 1 columns (order_id).")
    assert "Built from Order events (kafka)." in text and "9f1c2ab0" not in text


def test_plan_lines_show_the_platform_so_twins_do_not_read_as_duplicates() -> None:
    spec = EstateSpec.model_validate(
        {
            "tiers": [
                {
                    "name": "all",
                    "match": [{"names": ["*orders*"]}],
                    "requirements": {"require_description": True},
                }
            ],
            "policies": {"approvers": ["ana"]},
        }
    )
    a = AssetFacts(
        ds("marts.orders"), platform="dbt", name="acme.marts.orders", columns=(Column("id"),)
    )
    b = AssetFacts(
        ds("marts.orders", "looker"),
        platform="looker",
        name="acme.marts.orders",
        columns=(Column("id"),),
    )
    batch = plan(graph(a, b), spec, NOW)
    shown = sorted(batch.display(p.asset) for p in batch.proposals)
    assert shown == ["orders (dbt)", "orders (looker)"]


def test_a_git_identity_that_is_not_a_person_is_not_an_owner(tmp_path: Path) -> None:
    assert not is_person("maintainers") and not is_person("dependabot[bot]")
    assert is_person("ana") and is_person("devon")
    repo = tmp_path / "repo"
    (repo / "models").mkdir(parents=True)

    def commit(email: str, text: str) -> None:
        (repo / "models" / "orders.sql").write_text(text)
        subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
        subprocess.run(
            [
                "git",
                "-C",
                str(repo),
                "-c",
                f"user.email={email}",
                "-c",
                "user.name=x",
                "commit",
                "-qm",
                text,
            ],
            check=True,
        )

    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    commit("maintainers@acme.io", "select 1")
    commit("maintainers@acme.io", "select 2")
    commit("ana@acme.io", "select 3")
    assert git_authors(repo) == {"models/orders.sql": "ana"}
