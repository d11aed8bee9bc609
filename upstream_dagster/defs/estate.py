"""The estate as Dagster assets: raw feeds -> dbt models -> DataHub's own ingestion -> the
warehouse profiles, with every estate.yaml monitor as an asset check.

The dbt project decides which assets exist, so they are defined from its manifest when the code
location loads (`estate_defs`); the two jobs that build them select by key and live here at
module level, so other areas can launch them.
"""

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import dagster as dg
from dagster_dbt import DagsterDbtTranslator, DbtCliResource, dbt_assets

from upstream_dagster import clock
from upstream_dagster.datahub.ingest import ingest_dbt
from upstream_dagster.datahub.summary import summarize
from upstream_dagster.defs.dbt_resource import DeployedDbt
from upstream_dagster.defs.estate_jobs import (
    BUILD,
    OUTCOME,
    PROFILES,
    RAW_FEEDS,
    REFRESH,
    SOURCE_TESTS_TAG,
    estate_build_job,
    estate_refresh_job,
)
from upstream_dagster.defs.observations import monitor_checks, profiles_asset
from upstream_dagster.defs.resources import WAREHOUSE_POOL as POOL
from upstream_dagster.defs.resources import DataHubResource, UpstreamResource
from upstream_dagster.demo.generator import TABLES as DEMO_TABLES
from upstream_dagster.demo.generator import load_warehouse
from upstream_dagster.errors import BuildFailed
from upstream_dagster.services import build_failure, observe
from upstream_dagster.services.observe import ESTATE_NODES, Node, manifest_nodes
from upstream_dagster.spec.models import EstateSpec
from upstream_dagster.warehouse import built_state
from upstream_dagster.warehouse import duckdb_warehouse as wh
from upstream_dagster.warehouse.dbt_project import DbtProject, copy_artifacts

# The jobs and names other areas launch or read live apart, so that importing them does not
# import dagster-dbt (most of a command's start-up): see estate_jobs.
__all__ = [
    "BUILD",
    "DeployedDbt",
    "OUTCOME",
    "PROFILES",
    "RAW_FEEDS",
    "REFRESH",
    "estate_build_job",
    "estate_defs",
    "estate_refresh_job",
    "loads_feeds",
]


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

    def get_owners(self, dbt_resource_props: Mapping[str, Any]) -> Sequence[str] | None:
        """dagster-dbt's own (meta.dagster.owners, a group's email), else the dbt meta
        ``owner`` DataHub's dbt source reads, so Dagster and DataHub name the same owner."""
        declared = super().get_owners(dbt_resource_props)
        return declared or dagster_owners(_meta(dbt_resource_props).get("owner"))

    def get_tags(self, dbt_resource_props: Mapping[str, Any]) -> Mapping[str, str]:
        """dbt's tags, plus the meta ``domain`` and ``tier`` DataHub also reads."""
        tags = dict(super().get_tags(dbt_resource_props))
        meta = _meta(dbt_resource_props)
        for key in ("domain", "tier"):
            value = _tag_value(meta.get(key))
            if value:
                tags[key] = value
        return tags

    def get_group_name(self, dbt_resource_props: Mapping[str, Any]) -> str | None:
        if dbt_resource_props["resource_type"] == "source":
            return RAW_FEEDS
        fqn = dbt_resource_props.get("fqn") or []
        return str(fqn[1]) if len(fqn) > 2 else "dbt"


def _meta(props: Mapping[str, Any]) -> Mapping[str, Any]:
    return props.get("meta") or (props.get("config") or {}).get("meta") or {}


def _tag_value(value: Any) -> str:
    """A Dagster tag value: at most 63 letters, digits, '-', '_' or '.'."""
    text: str = re.sub(r"[^A-Za-z0-9_.-]+", "-", str(value or "")).strip("-")
    return text[:63]


def dagster_owners(value: Any) -> list[str] | None:
    """dbt meta owners (``"@bob"``, ``"ana@acme.io"``, ``"@bob, @dan"``) as Dagster owners,
    which must be an email or ``team:NAME``: an address is kept, a handle becomes a team."""
    names = [n.strip().lstrip("@") for n in str(value or "").split(",")]
    out = [n if "@" in n else f"team:{_tag_value(n)}" for n in names if n]
    return out or None


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


def _statuses(run_results: Path, keys: dict[str, dg.AssetKey]) -> dict[dg.AssetKey, str]:
    """What dbt said of each model it did not build: its error, or why it skipped it."""
    if not run_results.exists():
        return {}
    out = {}
    for r in json.loads(run_results.read_text())["results"]:
        key = keys.get(r["unique_id"])
        if key is not None and r["status"] in ("error", "skipped"):
            message = " ".join(str(r.get("message") or "").split())[:300]
            out[key] = f"{r['status']}: {message or 'dbt gave no reason'}; the table is unchanged"
    return out


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


def node_keys(manifest: dict[str, Any]) -> dict[str, dg.AssetKey]:
    """dbt unique id -> the Dagster asset key of every model, source, seed and snapshot."""
    key_of = EstateTranslator().get_asset_key
    nodes = [*manifest["nodes"].values(), *manifest["sources"].values()]
    return {n["unique_id"]: key_of(n) for n in nodes if n["resource_type"] in ESTATE_NODES}


def loads_feeds(manifest: dict[str, Any], feeds_sql: Path | None) -> bool:
    """Whether Upstream loads the project's raw feeds: a feed script names them, or they are
    the demo's own (its generator knows every one of them)."""
    wanted = {(s["schema"], s.get("identifier") or s["name"]) for s in manifest["sources"].values()}
    return feeds_sql is not None or bool(wanted) and wanted <= set(DEMO_TABLES)


def estate_defs(
    manifest: dict[str, Any], spec: EstateSpec, loads_feeds: bool = True
) -> dg.Definitions:
    """The assets the dbt project and estate.yaml's monitors define."""
    translator = EstateTranslator()
    nodes = manifest_nodes(manifest)
    keys = node_keys(manifest)
    sources = {
        dg.AssetKey([s["source_name"], s["name"]]): s.get("description") or s["name"]
        for s in manifest["sources"].values()
    }

    feeds = _feed_assets(sources) if loads_feeds and sources else _external_feeds(sources)

    # a build holds the warehouse: what else opens it waits for the one slot of its pool
    @dbt_assets(manifest=manifest, dagster_dbt_translator=translator, name="estate_dbt", pool=POOL)
    def estate_dbt(
        context: dg.AssetExecutionContext, dbt: DbtCliResource, upstream: UpstreamResource
    ) -> Iterator[Any]:
        # a refresh's subset, with the tests on the sources it changed (dagster-dbt adds them
        # to the selection it makes; they are not Dagster checks, so it would leave them out)
        tests = context.run.tags.get(SOURCE_TESTS_TAG, "").split()
        args = ["build", *(["--select", " ".join(tests)] if tests else [])]
        invocation = dbt.cli(args, context=context, raise_on_error=False)
        done: set[dg.AssetKey] = set()
        for event in invocation.stream():
            key = getattr(event, "asset_key", None)
            if isinstance(event, dg.Output | dg.MaterializeResult) and key is None:
                key = context.asset_key_for_output(event.output_name)
            if key is not None and not isinstance(event, dg.AssetCheckResult):
                done.add(key)
            yield event
        settings = upstream.settings()
        # Keep this build's run_results: later dbt commands overwrite them.
        copy_artifacts(invocation.target_path, settings.artifacts_dir, "run_results.json")
        status = _statuses(settings.artifacts_dir / "run_results.json", keys)
        # dbt skips what is downstream of a failing test or a model that failed to build. Say
        # so, and let the ingestion that follows still run: DataHub must learn of the failure.
        # (The run fails at `build_outcome`, after DataHub was told.)
        for key in _topological(context.selected_asset_keys - done, context.assets_def):
            yield dg.MaterializeResult(
                asset_key=key,
                metadata={
                    "rebuilt": False,
                    "dbt_status": status.get(key)
                    or "skipped: something upstream of it failed; the table is unchanged",
                },
            )

    @dg.asset(
        deps=list(estate_dbt.keys),
        group_name="datahub",
        kinds={"datahub", "dbt"},
        description="Runs DataHub's own dbt source (manifest, catalog, freshness, run results, "
        "meta_mapping to owners, domains, terms and tags) into the configured DataHub, so the "
        "graph follows the warehouse. On the embedded DataHub Lite it also links each dbt node "
        "to its warehouse table as siblings.",
    )
    def datahub_metadata(
        context: dg.AssetExecutionContext,
        dbt: DeployedDbt,
        datahub: DataHubResource,
        upstream: UpstreamResource,
    ) -> dg.MaterializeResult[Any]:
        result = ingest_estate(context, upstream.settings().artifacts_dir, dbt, datahub, manifest)
        artifacts = upstream.settings().artifacts_dir
        run_results = artifacts / "run_results.json"
        if run_results.exists():
            sources = artifacts / "sources.json"
            freshness = json.loads(sources.read_text()) if sources.exists() else None
            with datahub.graph() as graph:
                failed = observe.report_builds(
                    graph,
                    json.loads(run_results.read_text()),
                    nodes,
                    context.run.run_id,
                    freshness,
                )
            for urn, error in sorted(failed.items()):
                context.log.error(f"dbt could not build {urn}: {error}")
        return result

    @dg.asset(
        name=OUTCOME,
        deps=[PROFILES],
        group_name="datahub",
        kinds={"dbt"},
        description="Fails the run when dbt could not build a model (or could not measure a "
        "feed's freshness), after DataHub was told (a failing build check on it, with dbt's "
        "error) and the estate was profiled: the failed_builds sensor opens an incident for it.",
    )
    def build_outcome(upstream: UpstreamResource) -> dg.MaterializeResult[Any]:
        settings = upstream.settings()
        reshaped = built_state.seeds_out_of_shape(DbtProject.of(settings))
        build_failure.check(settings.artifacts_dir, manifest, settings.dbt_source_dir, reshaped)
        return dg.MaterializeResult(metadata={"models_failed": 0})

    profiles = profiles_asset(nodes, [datahub_metadata])
    checks = monitor_checks(spec, nodes, keys, dg.AssetKey(PROFILES))
    return dg.Definitions(
        assets=[*feeds, estate_dbt, datahub_metadata, profiles, build_outcome],
        asset_checks=checks,
        jobs=[estate_build_job, estate_refresh_job],
    )


def _feed_assets(sources: dict[dg.AssetKey, str]) -> list[dg.AssetsDefinition]:
    @dg.multi_asset(
        name=RAW_FEEDS,
        pool=POOL,
        specs=[
            dg.AssetSpec(k, group_name=RAW_FEEDS, description=f"Raw feed: {d}", kinds={"duckdb"})
            for k, d in sources.items()
        ],
        description="Loads the raw feeds into DuckDB, anchored to the one clock "
        "(UPSTREAM_CLOCK): the demo's shop and vendor feeds from a fixed seed, or the SQL "
        "script UPSTREAM_FEEDS names for another estate.",
    )
    def raw_feeds(
        context: dg.AssetExecutionContext, upstream: UpstreamResource
    ) -> Iterator[dg.MaterializeResult[Any]]:
        settings = upstream.settings()
        if settings.feeds_sql is not None:
            counts = wh.load_feeds(settings.warehouse, settings.feeds_sql, clock.now())
        else:
            counts = load_warehouse(settings.warehouse)
        for key in sorted(context.selected_asset_keys, key=lambda k: k.to_user_string()):
            table = ".".join(key.path[-2:])
            yield dg.MaterializeResult(asset_key=key, metadata={"rows": counts.get(table, 0)})

    return [raw_feeds]


def _external_feeds(sources: dict[dg.AssetKey, str]) -> list[dg.AssetSpec]:
    """A project whose feeds Upstream does not load (seeds aside, something else fills its
    sources): the feeds are external assets, in the graph and never materialized here."""
    return [
        dg.AssetSpec(
            k,
            group_name=RAW_FEEDS,
            description=f"Raw feed, loaded outside Upstream: {d}",
            kinds={"duckdb"},
        )
        for k, d in sources.items()
    ]


def estate_nodes(manifest: dict[str, Any]) -> list[tuple[Node, dg.AssetKey]]:
    """Every dbt model and source with its DataHub URN, warehouse relation and Dagster key."""
    keys = node_keys(manifest)
    return [(n, keys[n.unique_id]) for n in manifest_nodes(manifest)]


def ingest_estate(
    context: dg.AssetExecutionContext,
    artifacts: Path,
    dbt: DeployedDbt,
    datahub: DataHubResource,
    manifest: dict[str, Any],
) -> dg.MaterializeResult[Any]:
    # Freshness before docs: freshness rewrites the manifest without compiled SQL. Both in one
    # dbt process (they wrote one folder each, as two processes).
    done = dbt.chain(["source", "freshness"], ["docs", "generate"], manifest=manifest)
    if not (done.target / "catalog.json").exists():
        said = "\n    ".join(done.output.splitlines()[-8:])
        raise BuildFailed(
            "`dbt source freshness` and `dbt docs generate` produced no catalog.json"
            + (f":\n    {said}" if said else ""),
            f"run `dbt docs generate` in {dbt.project_dir} to see why (its log: "
            f"{done.target / 'dbt.log'})",
        )
    copy_artifacts(done.target, artifacts, "sources.json")
    observe.restamp_freshness(artifacts / "sources.json")
    copy_artifacts(done.target, artifacts, "manifest.json", "catalog.json")
    report = ingest_dbt(datahub.target(), artifacts)
    context.log.info(report.summary())
    for warning in report.warnings[:5]:
        context.log.warning(f"sink warning: {warning}")
    with datahub.graph() as graph:
        summary = summarize(graph)
    lines = "\n".join(summary.lines())
    return dg.MaterializeResult(
        metadata={
            **{k: dg.MetadataValue.int(v) for k, v in summary.as_dict().items()},
            "records_landed": dg.MetadataValue.int(report.written),
            "records_dropped": dg.MetadataValue.int(report.dropped),
            "twin_pairs_linked": dg.MetadataValue.int(report.siblings_linked),
            "transport": datahub.backend,
            "what DataHub holds": dg.MetadataValue.md(f"```\n{lines}\n```"),
        }
    )
