"""The read path: nine slices, each reporting its transport, merged into one MetadataContext."""

from __future__ import annotations

import pytest

from upstream_dagster.conformance.context import MetadataContext
from upstream_dagster.datahub import open_graph
from upstream_dagster.datahub.readpath import read_context
from upstream_dagster.settings import Settings

DBT = "urn:li:dataset:(urn:li:dataPlatform:dbt,warehouse.{},PROD)"

SLICES = [
    "asset_search",
    "lineage",
    "assertions",
    "schema_fields",
    "governance",
    "glossary",
    "documentation",
    "surroundings",
    "ownership",
]


@pytest.fixture
def read(shared_estate: Settings) -> tuple[MetadataContext, int]:
    """The context read from the session's estate, and the DataHub calls the read made."""
    graph = open_graph(shared_estate)
    try:
        return read_context(graph, as_of_ms=0), graph.counter.calls
    finally:
        graph.close()


def test_nine_slices_report_their_transport_and_calls(read: tuple[MetadataContext, int]) -> None:
    ctx, calls = read
    assert [s.name for s in ctx.slices] == SLICES
    assert all(s.transport == "lite" and s.fallback is None for s in ctx.slices)
    # a slice with nothing to read (the demo has no containers or data jobs) says so instead
    assert all(s.calls >= 1 or s.note for s in ctx.slices)
    assert ctx.calls == calls <= 22
    # an empty slice names its reason instead of a silent zero
    assert all(s.items or s.note for s in ctx.slices)


def test_twins_are_one_asset_named_by_the_dbt_entity(read: tuple[MetadataContext, int]) -> None:
    ctx, _ = read
    revenue = ctx.by_urn[DBT.format("marts.agg_daily_revenue")]
    assert revenue.twins == (DBT.format("marts.agg_daily_revenue").replace("dbt,", "duckdb,"),)
    assert revenue.upstreams == (DBT.format("marts.fct_orders"),)
    assert "urn:li:dashboard:(dbt,exposure.upstream_demo.revenue_dashboard)" in revenue.downstreams
    assert revenue.owners == ("urn:li:corpuser:alice",)
    assert revenue.last_updated_source == "last successful dbt run"
    assert len(ctx.datasets()) == 50 and not any("duckdb" in a.urn for a in ctx.datasets())
    raw = ctx.by_urn[DBT.format("vendor.discounts")]
    assert raw.last_updated_source.startswith("dbt source freshness")
    assert raw.downstreams == (DBT.format("staging.stg_vendor_discounts"),)
    assert any(a.kind == "dbt Freshness" for a in raw.assertions)


def test_field_documentation_is_read_in_batches_and_every_documented_field_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Tens of millions of undescribed fields at a million datasets are asked for in batches;
    a field whose documentation aspect DataHub holds gets its text whichever batch it is in,
    a field its schema already describes is never asked about."""
    from upstream_dagster.datahub import surroundings
    from upstream_dagster.datahub.assemble import Raw
    from upstream_dagster.spec.urns import field_urn

    monkeypatch.setattr(surroundings, "FIELD_BATCH", 3)
    raw = Raw()
    datasets = [f"urn:li:dataset:(urn:li:dataPlatform:duckdb,db.s.t{i},PROD)" for i in range(4)]
    for d in datasets:
        fields = [{"fieldPath": f"c{j}"} for j in range(4)] + [
            {"fieldPath": "described", "description": "has its own text"}
        ]
        raw.aspects[d]["schemaMetadata"] = {"fields": fields}
    held = {
        field_urn(d, f"c{j}"): f"text {i}.{j}"
        for i, d in enumerate(datasets)
        for j in range(4)
        if (i + j) % 3 == 0
    }
    asked: list[list[str]] = []

    class Graph:
        def get_aspects(self, urns: list[str], aspects: list[str]) -> dict[str, dict[str, dict]]:
            asked.append(list(urns))
            doc = lambda text: {"documentations": [{"documentation": text}]}  # noqa: E731
            return {u: {"documentation": doc(held[u])} for u in urns if u in held}

    found = surroundings.read_field_documentation(raw, Graph())  # type: ignore[arg-type]
    assert found == len(held)
    assert all(len(batch) <= 3 for batch in asked) and len(asked) == 6  # 16 fields, 3 a time
    assert not any("described" in u for batch in asked for u in batch)
    for i, d in enumerate(datasets):
        for j in range(4):
            text = raw.field_docs.get(d, {}).get(f"c{j}")
            assert text == (f"text {i}.{j}" if (i + j) % 3 == 0 else None)
