"""Descriptions a steward would accept, one small graph per rule (pure core, plus one write on
a throwaway DataHub Lite): text inherited along copies and carried columns, what the SQL does,
a generated restatement labelled and counted only where the tier says so."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import ValidationError

from upstream_dagster.conformance.carry import Carry
from upstream_dagster.conformance.context import AssetFacts, Column, MetadataContext
from upstream_dagster.conformance.describe import Described, describe
from upstream_dagster.conformance.fields import field_name
from upstream_dagster.conformance.plan import plan
from upstream_dagster.conformance.proposals import Change, apply_all
from upstream_dagster.conformance.requirements import GENERATED
from upstream_dagster.conformance.score import render
from upstream_dagster.conformance.sqlfacts import explain
from upstream_dagster.spec.models import EstateSpec

NOW = 1_800_000_000_000
KAFKA_PATH = "[version=2.0].[type=PaymentEvent].[type=long].amount_cents"


def ds(name: str, platform: str = "dbt") -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:{platform},acme.{name},PROD)"


def fld(dataset: str, path: str) -> str:
    return f"urn:li:schemaField:({dataset},{path})"


def ctx_of(*assets: AssetFacts, edges: tuple[tuple[str, str], ...] = ()) -> MetadataContext:
    downs: dict[str, list[str]] = {}
    for a in assets:
        for u in a.upstreams:
            downs.setdefault(u, []).append(a.urn)
    full = tuple(replace(a, downstreams=tuple(sorted(downs.get(a.urn, [])))) for a in assets)
    return MetadataContext(as_of_ms=NOW, transport="test", assets=full, column_edges=edges)


# The demo's shape: a source documented by its team, a staging model that renames and casts,
# a mart that divides cents into dollars and keeps only captured payments.
SOURCE = AssetFacts(
    ds("raw.payments"),
    platform="dbt",
    description="Payments as the payment provider reports them.",
    columns=(
        Column("id", description="The provider's payment id."),
        Column(KAFKA_PATH, description="What was charged, in cents."),
        Column("status", description="captured, refunded or failed."),
    ),
)
STAGING = AssetFacts(
    ds("staging.stg_payments"),
    platform="dbt",
    upstreams=(SOURCE.urn,),
    columns=(Column("payment_id"), Column("amount_cents"), Column("status")),
    sql="select id as payment_id, cast(amount_cents as bigint) as amount_cents, status "
    "from raw.payments",
)
MART = AssetFacts(
    ds("marts.fct_payments"),
    platform="dbt",
    upstreams=(STAGING.urn,),
    columns=(Column("payment_id"), Column("amount")),
    sql="select payment_id, amount_cents / 100 as amount from staging.stg_payments "
    "where status = 'captured'",
)
EDGES = (
    (fld(SOURCE.urn, "id"), fld(STAGING.urn, "payment_id")),
    (fld(SOURCE.urn, KAFKA_PATH), fld(STAGING.urn, "amount_cents")),
    (fld(SOURCE.urn, "status"), fld(STAGING.urn, "status")),
    (fld(STAGING.urn, "payment_id"), fld(MART.urn, "payment_id")),
    (fld(STAGING.urn, "amount_cents"), fld(MART.urn, "amount")),
)


def payments() -> MetadataContext:
    return ctx_of(SOURCE, STAGING, MART, edges=EDGES)


def test_sql_facts_tell_a_carried_column_from_a_computed_one() -> None:
    facts = explain(MART.sql, "duckdb")
    assert facts is not None
    assert facts.filters == ("status = 'captured'",)
    amount, pid = facts.column("amount"), facts.column("payment_id")
    assert (
        amount is not None
        and amount.kind == "computed"
        and amount.expression == "amount_cents / 100"
    )
    assert pid is not None and pid.kind == "carried" and pid.source == "payment_id"
    grouped = explain(
        "with t as (select order_id, sum(amount) as paid from p group by order_id) "
        "select o.order_id, coalesce(t.paid, 0) as paid from o left join t using (order_id) "
        "qualify row_number() over (partition by o.order_id order by o.ts desc) = 1",
        "duckdb",
    )
    assert grouped is not None and grouped.joins == (("t", "order_id"),)
    paid = grouped.column("paid")
    assert (
        paid is not None
        and paid.kind == "aggregated"
        and paid.expression == "COALESCE(SUM(amount), 0)"
    )
    assert grouped.latest == "per order_id, by ts"
    assert explain("this is not sql at all (", "duckdb") is None
    assert explain("select 1; select 2", "duckdb") is None


def test_a_model_built_one_to_one_from_a_source_inherits_its_description() -> None:
    ctx = payments()
    found = describe(ctx, Carry(ctx), ctx.by_urn[STAGING.urn])
    assert isinstance(found, Described) and not found.generated
    assert found.text == SOURCE.description  # word for word, renamed and cast columns and all
    assert found.evidence[0].startswith("copy: payments (dbt) holds the same data")


def test_carried_and_renamed_columns_inherit_their_description_computed_ones_do_not() -> None:
    ctx = payments()
    found = describe(ctx, Carry(ctx), ctx.by_urn[MART.urn])
    assert isinstance(found, Described)
    # payment_id was id two hops up, renamed on the way; amount is amount_cents / 100
    assert dict(found.columns) == {"payment_id": "The provider's payment id."}
    column_line = next(e for e in found.evidence if e.startswith("columns:"))
    assert "payment_id carry the same column of payments (dbt) unchanged" in column_line
    staged = describe(ctx, Carry(ctx), ctx.by_urn[STAGING.urn])
    assert isinstance(staged, Described)
    assert dict(staged.columns)["amount_cents"] == "What was charged, in cents."
    # a field path shown to a person is the field's name, not Avro's bookkeeping
    assert field_name(KAFKA_PATH) == "amount_cents"
    assert field_name("[version=2.0].[type=struct].address.[type=string].city") == "address.city"
    assert field_name("plain.path") == "plain.path"


def test_a_column_documented_downstream_documents_the_one_it_copies() -> None:
    """DataHub's UPSTREAM relationship: a copy's column text documents its only source."""
    bare = replace(SOURCE, description="", columns=tuple(replace_text(c) for c in SOURCE.columns))
    documented = replace(STAGING, columns=(Column("payment_id", description="Paid id."),))
    ctx = ctx_of(bare, documented, edges=EDGES[:1])
    found = describe(ctx, Carry(ctx), ctx.by_urn[bare.urn])
    assert isinstance(found, Described) and dict(found.columns) == {"id": "Paid id."}


def replace_text(c: Column) -> Column:
    return c._replace(description="")


def test_a_transforming_model_says_what_it_does_from_its_sql() -> None:
    ctx = payments()
    found = describe(ctx, Carry(ctx), ctx.by_urn[MART.urn])
    assert isinstance(found, Described) and not found.generated
    assert found.text.startswith("Built from stg_payments (dbt), keeping rows where status = ")
    assert "It computes amount as `amount_cents / 100`." in found.text
    assert "columns (" not in found.text  # it says what the SQL does, it lists nothing
    assert found.evidence[0].startswith("sql: its SQL in DataHub (viewProperties), read with")


SPEC = {
    "tiers": [
        {
            "name": "bi",
            "match": [{"platforms": ["looker"]}],
            "requirements": {"require_description": True},
        }
    ],
    "policies": {"approvers": ["ana"]},
}


def test_a_generated_restatement_is_labelled_and_counts_only_where_the_tier_accepts_it() -> None:
    view = AssetFacts(ds("orders_view", "looker"), platform="looker", upstreams=(MART.urn,))
    ctx = ctx_of(MART, view)
    strict = EstateSpec.model_validate(SPEC)
    batch = plan(ctx, strict, NOW)
    assert not batch.proposals
    (stays,) = batch.unfixable
    assert "only a generated restatement is possible" in stays.reason
    assert any(line.startswith(f"generated would read: {GENERATED}") for line in stays.looked)
    lenient = {**SPEC, "tiers": [{**SPEC["tiers"][0]}]}
    lenient["tiers"][0]["requirements"] = {
        "require_description": True,
        "accept_generated_descriptions": True,
    }
    batch = plan(ctx, EstateSpec.model_validate(lenient), NOW)
    (p,) = batch.proposals
    assert p.change.values[0].startswith(GENERATED)
    assert batch.shown(p).startswith("[generated] looker dataset built from fct_payments (dbt)")
    assert batch.base.descriptions.missing == 1 and batch.projected.descriptions.generated == 1
    assert "descriptions: 0 documented, 1 generated restatements" in render(batch.projected)
    # the label is read back from DataHub: the strict tier fails the same text
    written = apply_all(ctx, batch.proposals)
    again = plan(written, strict, NOW)
    assert again.base.overall.passed == 0 and again.base.descriptions.generated == 1


def test_accepting_generated_text_qualifies_a_requirement_and_is_not_one() -> None:
    spec = EstateSpec.model_validate(
        {**SPEC, "tiers": [{**SPEC["tiers"][0], "requirements": {
            "require_description": True, "accept_generated_descriptions": True}}]}
    )  # fmt: skip
    assert spec.tiers[0].requirements.active() == ["require_description"]
    with pytest.raises(ValidationError, match="qualifies require_description"):
        EstateSpec.model_validate(
            {**SPEC, "tiers": [{**SPEC["tiers"][0], "requirements": {
                "require_owner": True, "accept_generated_descriptions": True}}]}
        )  # fmt: skip


def test_a_documented_table_still_inherits_its_carried_columns_descriptions() -> None:
    """DataHub's documentation propagation documents a carried column whatever its table says:
    a described table with an undocumented carried column gets that column's text, priced at
    no points (it moves no check) yet proposed; a computed column gets nothing."""
    described = replace(MART, description="Captured payments, in dollars.")
    ctx = ctx_of(SOURCE, STAGING, described, edges=EDGES)
    spec = EstateSpec.model_validate(
        {
            "tiers": [{"name": "marts", "match": [{"names": ["marts.*"]}],
                       "requirements": {"require_description": True}}],
            "policies": {"approvers": ["ana"]},
        }
    )  # fmt: skip
    batch = plan(ctx, spec, NOW)
    assert batch.base.overall.passed == 1 and not batch.unfixable
    (p,) = batch.proposals
    assert p.requirement == "column_descriptions" and p.change.kind == "set_column_descriptions"
    assert p.change.values == ("payment_id", "The provider's payment id.")  # not amount
    assert batch.shown(p) == "1 column description inherited: payment_id"
    assert p.price is not None and p.price.delta_points == 0 and p.price.checks_broken == 0
    assert "payment_id carry the same column of payments (dbt) unchanged" in p.evidence[0]
    after = apply_all(ctx, batch.proposals).by_urn[MART.urn]
    assert dict((c.path, c.description) for c in after.columns)["payment_id"] == (
        "The provider's payment id."
    )
    # rejected once, it does not come back
    assert not plan(ctx, spec, NOW, rejected=frozenset({p.id})).proposals


def test_nothing_known_is_no_description_and_says_what_was_looked_at() -> None:
    lonely = AssetFacts(ds("x", "looker"), platform="looker", columns=(Column("id"),))
    ctx = ctx_of(lonely)
    found = describe(ctx, Carry(ctx), lonely)
    assert found == (
        "copies: none",
        "sql: none in DataHub",
        "graph: no container, lineage, consumer or job to restate",
    )


def test_a_description_with_its_columns_is_written_in_two_aspects_and_undone(
    tmp_path: Path,
) -> None:
    from upstream_dagster.datahub import changes
    from upstream_dagster.datahub.lite import LiteGraph

    graph = LiteGraph(tmp_path / "lite.sqlite", create=True)
    urn = ds("events", "kafka")
    try:
        before = graph.get_aspects([urn], ["editableDatasetProperties", "editableSchemaMetadata"])
        change = Change("set_description", ("Payment events.",), ((KAFKA_PATH, "In cents."),))
        written = changes.apply(graph, urn, change)
        assert [w.receipt.aspect for w in written] == [
            "editableDatasetProperties",
            "editableSchemaMetadata",
        ]
        assert all(w.receipt.written for w in written)
        held = graph.get_aspects([urn], ["editableSchemaMetadata"])[urn]["editableSchemaMetadata"]
        assert held["editableSchemaFieldInfo"] == [
            {"fieldPath": KAFKA_PATH, "description": "In cents."}
        ]
        for w in reversed(written):
            changes.restore(graph, w.pre_image)
        after = graph.get_aspects([urn], ["editableDatasetProperties", "editableSchemaMetadata"])
        assert after == before
    finally:
        graph.close()


def test_on_a_server_a_column_description_travels_as_a_patch_of_that_field_only() -> None:
    from datahub.specific.dataset import DatasetPatchBuilder

    from upstream_dagster.datahub.changes import WRITERS

    builder = DatasetPatchBuilder(ds("events", "kafka"))
    WRITERS["set_column_descriptions"].patch(builder, ("a/b", "A slash.", "c", "C."), set())
    (mcp,) = builder.build()
    assert mcp.aspectName == "editableSchemaMetadata"
    ops = json.loads(mcp.aspect.value)  # type: ignore[union-attr]
    assert [(o["op"], o["path"], o["value"]) for o in ops] == [
        ("add", "/editableSchemaFieldInfo/a~1b/description", "A slash."),
        ("add", "/editableSchemaFieldInfo/c/description", "C."),
    ]
