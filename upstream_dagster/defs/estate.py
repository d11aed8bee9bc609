"""The demo estate as Dagster assets: raw feeds -> dbt models -> DataHub's own ingestion."""

import json
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import dagster as dg
from dagster_dbt import DagsterDbtTranslator, DbtCliResource, dbt_assets

from upstream_dagster.defs.resources import DataHubResource
from upstream_dagster.demo.generator import load_warehouse
from upstream_dagster.errors import BuildFailed
from upstream_dagster.settings import Settings


class EstateTranslator(DagsterDbtTranslator):
    def get_asset_check_spec(
        self,
        asset_spec: dg.AssetSpec,
        manifest: Mapping[str, Any],
        unique_id: str,
        project: Any,
    ) -> dg.AssetCheckSpec | None:
        # A failing dbt test must still reach DataHub (the ingestion runs after the build):
        # dbt tests are never blocking here. The reliability loop acts on them.
        spec = super().get_asset_check_spec(asset_spec, manifest, unique_id, project)
        if spec is None:
            return None
        return dg.AssetCheckSpec(
            spec.name,
            asset=spec.asset_key,
            description=spec.description or test_description(manifest, unique_id),
            additional_deps=[d.asset_key for d in spec.additional_deps],
            metadata=spec.metadata,
            blocking=False,
        )

    def get_group_name(self, dbt_resource_props: Mapping[str, Any]) -> str | None:
        if dbt_resource_props["resource_type"] == "source":
            return "raw_feeds"
        fqn = dbt_resource_props.get("fqn") or []
        return str(fqn[1]) if len(fqn) > 2 else "dbt"


TEST_MEANING = {
    "not_null": "fails when {column} holds a NULL",
    "unique": "fails when two rows share a {column}",
    "accepted_values": "fails when {column} holds a value outside {values}",
    "relationships": "fails when a {column} has no match in {to}",
}


def test_description(manifest: Mapping[str, Any], unique_id: str) -> str:
    """What a dbt test checks, for a reviewer: from its generic test's name and arguments."""
    node = (manifest.get("nodes") or {}).get(unique_id) or {}
    meta = node.get("test_metadata") or {}
    kwargs = meta.get("kwargs") or {}
    name = str(meta.get("name") or node.get("name") or unique_id)
    column = str(kwargs.get("column_name") or node.get("column_name") or "the column")
    meaning = TEST_MEANING.get(name, "fails when its query returns rows").format(
        column=column,
        values=", ".join(map(str, kwargs.get("values") or [])) or "the accepted list",
        to=str(kwargs.get("to") or "the parent table").replace("ref(", "").strip("()'\""),
    )
    return (
        f"dbt test {name}: {meaning}. Not blocking: a failure still reaches DataHub as a "
        "failing assertion, which the failing_assertions sensor investigates."
    )


def _source_keys(data: dict[str, Any]) -> dict[dg.AssetKey, str]:
    return {
        dg.AssetKey([s["source_name"], s["name"]]): s.get("description") or s["name"]
        for s in data["sources"].values()
    }


def _build_errors(run_results: Path) -> list[str]:
    if not run_results.exists():
        return ["dbt wrote no run_results.json"]
    results = json.loads(run_results.read_text())["results"]
    return [
        f"{r['unique_id']}: {(r.get('message') or '').strip()[:300]}"
        for r in results
        if r["status"] == "error" and not r["unique_id"].startswith(("test.", "unit_test."))
    ]


def _copy(src: Path, dst_dir: Path, *names: str) -> None:
    dst_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        if (src / name).exists():
            shutil.copy2(src / name, dst_dir / name)


def _topological(keys: set[dg.AssetKey], assets_def: dg.AssetsDefinition) -> list[dg.AssetKey]:
    """``keys`` with every key after the keys it depends on (Dagster checks the order)."""
    deps = assets_def.asset_deps
    out: list[dg.AssetKey] = []
    pending = sorted(keys, key=lambda k: k.to_user_string())
    while pending:
        ready = [k for k in pending if not (set(deps.get(k, ())) & set(pending))]
        out += ready or pending  # a cycle cannot happen in dbt; never loop forever
        pending = [k for k in pending if k not in out]
    return out


def estate_assets(settings: Settings, manifest_file: Path) -> list[Any]:
    # The parsed manifest, not its path: dagster-dbt caches manifests by path within a process,
    # and the deployed project is re-parsed in place when it changes.
    manifest: dict[str, Any] = json.loads(manifest_file.read_text())
    translator = EstateTranslator()
    sources = _source_keys(manifest)

    @dg.multi_asset(
        name="raw_feeds",
        specs=[
            dg.AssetSpec(k, group_name="raw_feeds", description=f"Raw feed: {d}")
            for k, d in sources.items()
        ],
        description="Generates the demo's raw shop and vendor feeds into DuckDB from a fixed "
        "seed, anchored to the one clock (UPSTREAM_CLOCK).",
    )
    def raw_feeds(context: dg.AssetExecutionContext) -> Iterator[dg.MaterializeResult]:
        counts = load_warehouse(settings.warehouse)
        for key in sorted(context.selected_asset_keys, key=lambda k: k.to_user_string()):
            table = ".".join(key.path[-2:])
            yield dg.MaterializeResult(asset_key=key, metadata={"rows": counts.get(table, 0)})

    @dbt_assets(manifest=manifest, dagster_dbt_translator=translator, name="estate_dbt")
    def estate_dbt(context: dg.AssetExecutionContext, dbt: DbtCliResource) -> Iterator[Any]:
        invocation = dbt.cli(["build"], context=context, raise_on_error=False)
        done: set[dg.AssetKey] = set()
        for event in invocation.stream():
            key = getattr(event, "asset_key", None)
            if isinstance(event, dg.Output | dg.MaterializeResult) and key is None:
                key = context.asset_key_for_output(event.output_name)
            if key is not None and not isinstance(event, dg.AssetCheckResult):
                done.add(key)
            yield event
        # dbt skips what is downstream of a failing test. Say so, and let the ingestion that
        # follows still run: DataHub must learn of the failure.
        for key in _topological(context.selected_asset_keys - done, context.assets_def):
            yield dg.MaterializeResult(
                asset_key=key,
                metadata={
                    "rebuilt": False,
                    "dbt_status": "skipped: a test upstream of it failed; the table is unchanged",
                },
            )
        # Keep this build's run_results: later dbt commands overwrite them.
        _copy(invocation.target_path, settings.artifacts_dir, "run_results.json")
        errors = _build_errors(invocation.target_path / "run_results.json")
        if errors:
            raise BuildFailed(
                "dbt build failed on " + "; ".join(errors[:3]),
                f"fix the model SQL in {settings.dbt_source_dir}/models (the deployed copy is "
                f"{settings.dbt_project_dir}), then re-run `make demo`",
            )

    @dg.asset(
        deps=list(estate_dbt.keys),
        group_name="datahub",
        kinds={"datahub"},
        description="Runs DataHub's own dbt source (manifest, catalog, freshness, run results, "
        "meta_mapping to owners, domains, terms and tags) into the configured DataHub, so the "
        "graph follows the warehouse. On the embedded DataHub Lite it also links each dbt node "
        "to its warehouse table as siblings.",
    )
    def datahub_metadata(
        context: dg.AssetExecutionContext, dbt: DbtCliResource, datahub: DataHubResource
    ) -> dg.MaterializeResult:
        return ingest_estate(context, datahub.target(settings), dbt, manifest)

    return [raw_feeds, estate_dbt, datahub_metadata]


def estate_nodes(manifest_file: Path) -> list[Any]:
    """Every dbt model and source with its Dagster key, DataHub URN and warehouse relation."""
    from upstream_dagster.defs.monitors import manifest_nodes

    manifest = json.loads(manifest_file.read_text())
    translator = EstateTranslator()
    return manifest_nodes(manifest, translator.get_asset_key)


def ingest_estate(
    context: dg.AssetExecutionContext,
    settings: Settings,
    dbt: DbtCliResource,
    manifest: dict[str, Any],
) -> dg.MaterializeResult:
    from upstream_dagster.datahub import open_graph
    from upstream_dagster.datahub.ingest import ingest_dbt
    from upstream_dagster.datahub.summary import summarize

    # Freshness before docs: freshness rewrites the manifest without compiled SQL.
    fresh = dbt.cli(["source", "freshness"], manifest=manifest, raise_on_error=False)
    fresh.wait()
    _copy(fresh.target_path, settings.artifacts_dir, "sources.json")
    docs = dbt.cli(["docs", "generate"], manifest=manifest, raise_on_error=False)
    docs.wait()
    if not (docs.target_path / "catalog.json").exists():
        raise BuildFailed(
            "`dbt docs generate` produced no catalog.json",
            "run `dbt docs generate` in the deployed project to see why",
        )
    _copy(docs.target_path, settings.artifacts_dir, "manifest.json", "catalog.json")
    report = ingest_dbt(settings, settings.artifacts_dir)
    context.log.info(report.summary())
    for warning in report.warnings[:5]:
        context.log.warning(f"sink warning: {warning}")
    graph = open_graph(settings)
    try:
        summary = summarize(graph)
    finally:
        graph.close()
    lines = "\n".join(summary.lines())
    return dg.MaterializeResult(
        metadata={
            **{k: dg.MetadataValue.int(v) for k, v in summary.as_dict().items()},
            "records_landed": dg.MetadataValue.int(report.written),
            "records_dropped": dg.MetadataValue.int(report.dropped),
            "twin_pairs_linked": dg.MetadataValue.int(report.siblings_linked),
            "transport": settings.backend,
            "what DataHub holds": dg.MetadataValue.md(f"```\n{lines}\n```"),
        }
    )
