"""Issue 29 on the demo estate (dbt build, DataHub's dbt source, DataHub Lite): every batch the
score job would plan, read as a steward reads it in the Dagster UI. Descriptions say what each
model's SQL does or carry a copy's text, carried columns inherit their documentation, owners
and domains come from the neighbours that agree, and what stays says why."""

from __future__ import annotations

import re

import dagster as dg

from upstream_dagster import clock
from upstream_dagster.conformance.carry import Carry
from upstream_dagster.conformance.proposals import Proposal
from upstream_dagster.conformance.requirements import is_generated
from upstream_dagster.datahub import MetadataGraph, connected
from upstream_dagster.datahub.readpath import read_context
from upstream_dagster.defs.batch_view import plan_metadata
from upstream_dagster.services import coverage
from upstream_dagster.settings import Settings
from upstream_dagster.spec.loader import load_estate


def test_the_demo_plan_is_what_a_steward_would_accept(shared_estate: Settings) -> None:
    spec = load_estate(shared_estate.estate_file)
    every = spec.policies.model_copy(update={"max_proposals_per_run": 1000})
    with connected(shared_estate) as graph:
        ctx = read_context(graph, clock.now_ms())
    inputs = coverage.plan_inputs(shared_estate, frozenset())
    batch = coverage.replan(ctx, spec.model_copy(update={"policies": every}), inputs)
    of = {
        kind: [p for p in batch.proposals if p.requirement == kind]
        for kind in ("require_description", "require_owner", "require_domain")
    }
    said = {batch.display(p.asset): p.change.values[0] for p in of["require_description"]}
    assert not [t for t in said.values() if re.search(r"\d+ columns? \(", t) or is_generated(t)]
    sources = [p.evidence[0].split(":")[0] for p in of["require_description"]]
    assert (sources.count("sql"), sources.count("copy")) == (12, 7)
    # what the model does, from its SQL; a copy's text word for word
    assert "It computes line_amount as `quantity * unit_price`." in said["stg_order_items (dbt)"]
    assert said["int_inventory_latest (dbt)"].startswith("The latest row per product_id, by ")
    assert (
        said["stg_returns (dbt)"]
        == ctx.by_urn[next(a.urn for a in ctx.datasets() if a.label == "returns (dbt)")].description
    )
    # every undocumented column carrying a documented one unchanged inherits its text, with
    # the table's description or, on a documented table, on its own
    carry, scored = Carry(ctx), {r.asset for r in batch.base.results}
    inheritable = {
        (a.urn, c.path)
        for a in ctx.datasets()
        if a.urn in scored
        for c in a.columns
        if not c.description and carry.documented(a, c) is not None
    }
    inherited = {(p.asset, path) for p in batch.proposals for path, _ in p.change.columns} | {
        (p.asset, path)
        for p in batch.proposals
        if p.requirement == "column_descriptions"
        for path in p.change.values[::2]
    }
    assert len(inheritable) == 20 and inherited == inheritable
    # owners and domains from the neighbours that agree, naming them
    assert (len(of["require_owner"]), len(of["require_domain"])) == (20, 4)
    for p in of["require_owner"] + of["require_domain"]:
        assert re.match(r"(copies|lineage|container|consumers|domain): \S+ \(dbt\)", p.evidence[0])
    # what stays says why: the rule that looked and what it found
    assert len(batch.unfixable) == 23
    assert all(
        re.match(r"(owners|domains|description|glossary term|required_\w+): ", u.reason)
        for u in batch.unfixable
    )
    # the UI: the proposals asset's metadata shows every reason, and the dial's two counts
    meta = plan_metadata(batch)
    table = meta["stays_a_violation_table"]
    assert isinstance(table, dg.TableMetadataValue) and len(table.records) == 23
    tie = next(
        r.data["violation"]
        for r in table.records
        if r.data["violation"].startswith("int_shipment_times (dbt)")
    )
    assert "owners: the lineage rule splits evenly between bob, carol (2 each)" in tie
    assert "owners: the lineage rule splits evenly" in meta["stays_a_violation"].value
    assert "stg_vendor_shipments (dbt) (upstream): carol" in meta["stays_a_violation"].value
    assert meta["descriptions_before"] == "28 documented, 0 generated, 22 missing"
    assert meta["descriptions_projected"] == "47 documented, 0 generated, 3 missing"


def test_inherited_column_descriptions_are_read_back_and_undone(estate: Settings) -> None:
    """Written into DataHub, an inherited column description is documentation the next plan
    reads (nothing is proposed twice) and the dial does not move; its pre-image undoes it."""
    from upstream_dagster.datahub.changes import apply, restore

    spec = load_estate(estate.estate_file)
    every = spec.model_copy(
        update={"policies": spec.policies.model_copy(update={"max_proposals_per_run": 1000})}
    )
    inputs = coverage.plan_inputs(estate, frozenset())

    def columns_proposed(graph: MetadataGraph) -> tuple[list[Proposal], float]:
        batch = coverage.replan(read_context(graph, clock.now_ms()), every, inputs)
        found = [p for p in batch.proposals if p.requirement == "column_descriptions"]
        return found, batch.base.overall.percent

    with connected(estate) as graph:
        before, percent = columns_proposed(graph)
        written = [w for p in before for w in apply(graph, p.asset, p.change)]
        assert len(before) == 13 and all(w.receipt.written for w in written)
        assert columns_proposed(graph) == ([], percent)
        for w in reversed(written):
            restore(graph, w.pre_image)
        assert len(columns_proposed(graph)[0]) == 13
