"""Owners and domains grounded the way a steward grounds them, one small graph per rule (pure
core): copies, lineage (parents, children, jobs, the same layer), the container, the consumers,
then farther evidence; a true tie is no proposal, and every abstention says what each rule
found."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

from upstream_dagster.conformance.carry import Carry
from upstream_dagster.conformance.context import AssetFacts, Column, MetadataContext
from upstream_dagster.conformance.infer import Abstain, infer_domain, infer_owner
from upstream_dagster.conformance.plan import plan
from upstream_dagster.services.coverage import git_authors, is_person
from upstream_dagster.spec.models import EstateSpec

NOW = 1_800_000_000_000
GROUP = "urn:li:corpGroup:platform-team"
ANA = "urn:li:corpuser:ana"
BO = "urn:li:corpuser:bo"
CY = "urn:li:corpuser:cy"
SALES = "urn:li:domain:sales"
FINANCE = "urn:li:domain:finance"
NAMES = ((GROUP, "Platform team"), (ANA, "Ana Souza"), (BO, "Bo Chen"), (CY, "Cy Park"))


def ds(name: str, platform: str = "dbt") -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:{platform},acme.{name},PROD)"


def field(dataset: str, path: str) -> str:
    return f"urn:li:schemaField:({dataset},{path})"


def graph(
    *assets: AssetFacts,
    around: tuple[AssetFacts, ...] = (),
    edges: tuple[tuple[str, str], ...] = (),
) -> MetadataContext:
    """Fill each asset's downstreams from the others' upstreams, as DataHub's lineage reads."""
    downs: dict[str, list[str]] = {}
    for a in assets:
        for u in a.upstreams:
            downs.setdefault(u, []).append(a.urn)
    full = tuple(replace(a, downstreams=tuple(sorted(downs.get(a.urn, [])))) for a in assets)
    names = NAMES + tuple((x.urn, x.display_name) for x in around if x.display_name)
    return MetadataContext(
        as_of_ms=NOW, transport="test", assets=full, names=names, around=around, column_edges=edges
    )


def owner(ctx: MetadataContext, urn: str) -> tuple[tuple[str, ...], tuple[str, ...]] | Abstain:
    found = infer_owner(ctx, Carry(ctx), ctx.by_urn[urn])
    return found if isinstance(found, Abstain) else (found[0].values, found[1])


def test_copies_the_owners_of_the_same_data_together_as_a_team() -> None:
    """A Postgres table exported to S3 by a job: the S3 copy's owners own the original."""
    cols = (Column("id"), Column("amount"))
    pg = AssetFacts(ds("orders", "postgres"), platform="postgres", columns=cols)
    s3 = AssetFacts(
        ds("orders", "s3"), platform="s3", columns=cols, upstreams=(pg.urn,), owners=(GROUP, ANA)
    )
    edges = tuple((field(pg.urn, c.path), field(s3.urn, c.path)) for c in cols)
    ctx = graph(pg, s3, edges=edges)
    found = owner(ctx, pg.urn)
    assert not isinstance(found, Abstain)
    values, evidence = found
    assert values == (GROUP, ANA)  # found together on the same asset: proposed together
    assert evidence[0].startswith("copies: orders (s3) (holds the same data): Platform team, Ana")


def test_the_owner_most_of_the_lineage_shares_wins_over_the_first_owner_upstream() -> None:
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
    found = owner(ctx, orphan.urn)
    assert not isinstance(found, Abstain)
    assert found[0] == (ANA,)
    assert found[1][0].startswith("lineage: s0 (dbt) (built from the same orders (dbt)): Ana")
    assert "as TECHNICAL_OWNER" in found[1][0]
    assert found[1][1] == "alternatives: Platform team (1)"


def test_the_data_job_that_writes_an_asset_names_its_owner() -> None:
    job = AssetFacts(
        "urn:li:dataJob:(urn:li:dataFlow:(spark,export,PROD),export)",
        entity_type="dataJob",
        display_name="export_orders",
        owners=(BO,),
    )
    table = AssetFacts(ds("orders", "s3"), platform="s3", jobs=(job.urn,))
    ctx = graph(table, around=(job,))
    found = owner(ctx, table.urn)
    assert not isinstance(found, Abstain) and found[0] == (BO,)
    assert "export_orders (a data job that reads or writes it): Bo Chen" in found[1][0]


def test_the_container_and_the_tables_in_it_name_the_owner() -> None:
    workspace = AssetFacts(
        "urn:li:container:ws", entity_type="container", display_name="Sales workspace"
    )
    owned = AssetFacts(ds("kpis", "powerbi"), platform="powerbi", container=workspace.urn)
    others = [
        AssetFacts(
            ds(f"t{i}", "powerbi"), platform="powerbi", container=workspace.urn, owners=(CY,)
        )
        for i in range(2)
    ]
    ctx = graph(owned, *others, around=(workspace,))
    found = owner(ctx, owned.urn)
    assert not isinstance(found, Abstain) and found[0] == (CY,)
    assert found[1][0].startswith("container: t0 (powerbi) (in the same container Sales workspace)")


def test_the_dashboards_reading_an_asset_name_its_owner() -> None:
    table = AssetFacts(ds("kpis", "tableau"), platform="tableau")
    chart = AssetFacts("urn:li:chart:(tableau,c1)", entity_type="chart", upstreams=(table.urn,))
    board = AssetFacts(
        "urn:li:dashboard:(tableau,d1)",
        entity_type="dashboard",
        upstreams=(chart.urn,),
        owners=(BO,),
    )
    ctx = graph(table, chart, board)
    found = owner(ctx, table.urn)
    assert not isinstance(found, Abstain) and found[0] == (BO,)
    assert "(a dashboard reading it): Bo Chen" in found[1][0]


def test_a_tie_is_no_proposal_says_who_is_tied_and_a_later_rule_may_break_it() -> None:
    parent = AssetFacts(ds("raw.orders"), name="acme.raw.orders")
    a = AssetFacts(ds("staging.a"), upstreams=(parent.urn,), owners=(ANA,))
    b = AssetFacts(ds("staging.b"), upstreams=(parent.urn,), owners=(BO,))
    orphan = AssetFacts(ds("staging.orphan"), upstreams=(parent.urn,))
    ctx = graph(parent, a, b, orphan)
    found = owner(ctx, orphan.urn)
    assert isinstance(found, Abstain)
    assert found.reason.startswith(
        "owners: the lineage rule splits evenly between Ana Souza, Bo Chen (1 "
    )
    assert "a person chooses" in found.reason
    assert any(line.startswith("container: nothing found") for line in found.looked)
    # a dashboard that reads it, owned by one of the tied, breaks the tie among them only
    board = AssetFacts("urn:li:dashboard:(x,d)", entity_type="dashboard", upstreams=(orphan.urn,))
    broken = graph(parent, a, b, orphan, replace(board, owners=(BO, CY)))
    found = owner(broken, orphan.urn)
    assert not isinstance(found, Abstain) and found[0] == (BO,)
    # owners of one asset are not a team when there are too many of them: a true tie
    crowd = replace(parent, owners=tuple(f"urn:li:corpuser:p{i}" for i in range(12)))
    found = owner(graph(crowd, orphan), orphan.urn)
    assert isinstance(found, Abstain) and "0.083 each" in found.reason


def test_nothing_anywhere_is_no_proposal_and_says_what_each_rule_found() -> None:
    folder = AssetFacts("urn:li:container:f", entity_type="container", display_name="landing")
    lonely = AssetFacts(ds("landing.x", "s3"), platform="s3", container=folder.urn)
    other = AssetFacts(ds("landing.y", "s3"), platform="s3", container=folder.urn)
    ctx = graph(lonely, other, around=(folder,))
    found = owner(ctx, lonely.urn)
    assert isinstance(found, Abstain)
    assert found.reason.startswith("owners: none of the 2 assets the rules looked at has an owner")
    assert "container: 2 looked at (landing, y (s3)), none has owner" in found.looked
    assert found.looked[-1] == "git: not a dbt model"


def test_no_domain_from_two_hops_away_when_the_parents_disagree() -> None:
    grand = AssetFacts(ds("raw.orders"), domains=(SALES,))
    p1 = AssetFacts(ds("staging.p1"), upstreams=(grand.urn,), domains=(SALES,))
    p2 = AssetFacts(ds("staging.p2"), upstreams=(grand.urn,), domains=(FINANCE,))
    child = AssetFacts(ds("marts.child"), upstreams=(p1.urn, p2.urn))
    ctx = graph(grand, p1, p2, child)
    found = infer_domain(ctx, Carry(ctx), ctx.by_urn[child.urn])
    assert isinstance(found, Abstain)
    assert "the lineage rule splits evenly between finance, sales" in found.reason
    # a single-domain parent is a proposal, citing the parent by name and platform
    only = graph(grand, p1, AssetFacts(ds("marts.c2"), upstreams=(p1.urn,)))
    ok = infer_domain(only, Carry(only), only.by_urn[ds("marts.c2")])
    assert not isinstance(ok, Abstain)
    assert ok[0].values == (SALES,) and "p1 (dbt) (upstream): sales" in ok[1][0]
    # and with nothing near, the nearest domain farther upstream is used
    far = graph(grand, replace(p1, domains=()), AssetFacts(ds("marts.c3"), upstreams=(p1.urn,)))
    farther = infer_domain(far, Carry(far), far.by_urn[ds("marts.c3")])
    assert not isinstance(farther, Abstain)
    assert farther[1][0].startswith("upstream lineage: orders (dbt) (2 hops upstream): sales")


def test_plan_lines_show_the_platform_so_twins_do_not_read_as_duplicates() -> None:
    spec = EstateSpec.model_validate(
        {
            "tiers": [
                {
                    "name": "all",
                    "match": [{"names": ["*orders*"]}],
                    "requirements": {"require_owner": True},
                }
            ],
            "policies": {"approvers": ["ana"]},
        }
    )
    parent = AssetFacts(ds("raw.feed"), owners=(ANA,))
    a = AssetFacts(ds("marts.orders"), platform="dbt", upstreams=(parent.urn,))
    b = AssetFacts(ds("marts.orders", "looker"), platform="looker", upstreams=(parent.urn,))
    batch = plan(graph(parent, a, b), spec, NOW)
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
