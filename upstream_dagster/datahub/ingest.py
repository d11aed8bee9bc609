"""Metadata enters DataHub only through DataHub's own ingestion sources.

The dbt source reads manifest, catalog, sources (freshness) and run_results; the file source
loads datapacks such as DataHub's showcase estate. The sink is DataHub Lite by default, or a
GMS when ``DATAHUB_GMS_URL`` is set. On Lite, Upstream then links dbt nodes and their warehouse
tables as siblings, which a DataHub server does by itself.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from upstream_dagster.datahub import Target, _sdk
from upstream_dagster.datahub.lite import LiteGraph
from upstream_dagster.datahub.model import Receipt
from upstream_dagster.errors import BuildFailed

log = logging.getLogger(__name__)
TARGET_PLATFORM = "duckdb"

# dbt `meta` keys mapped onto DataHub aspects by the dbt source itself.
META_MAPPING: dict[str, Any] = {
    "owner": {
        "match": "^@?(.+)$",
        "operation": "add_owner",
        "config": {"owner_type": "user", "owner_category": "DATAOWNER"},
    },
    "domain": {"match": ".+", "operation": "add_domain", "config": {"domain": "{{ $match }}"}},
    "terms": {"match": ".+", "operation": "add_terms", "config": {"separator": ","}},
    "tier": {"match": ".+", "operation": "add_tag", "config": {"tag": "{{ $match }}"}},
}
COLUMN_META_MAPPING: dict[str, Any] = {
    "terms": {"match": ".+", "operation": "add_terms", "config": {"separator": ","}},
}


@dataclass
class IngestReport:
    source: str
    produced: int = 0
    written: int = 0
    dropped: int = 0
    warnings: list[str] = field(default_factory=list)
    siblings_linked: int = 0

    def summary(self) -> str:
        return (
            f"{self.source}: {self.produced} records produced, {self.written} landed, "
            f"{self.dropped} dropped by the sink"
            + (f", {self.siblings_linked} twin pairs linked" if self.siblings_linked else "")
        )


def sink_config(target: Target) -> dict[str, Any]:
    if target.gms_url:
        return {
            "type": "datahub-rest",
            "config": {"server": target.gms_url, "token": target.gms_token},
        }
    return {
        "type": "datahub-lite",
        "config": {
            "type": "sqlite",
            "config": {
                "file": str(target.lite_file),
                "options": {"journal_mode": "WAL", "busy_timeout": 10000},
            },
        },
    }


def dbt_recipe(target: Target, artifacts: Path) -> dict[str, Any]:
    lite = not target.gms_url
    source: dict[str, Any] = {
        "manifest_path": str(artifacts / "manifest.json"),
        "catalog_path": str(artifacts / "catalog.json"),
        "target_platform": TARGET_PLATFORM,
        "include_column_lineage": True,
        "infer_dbt_schemas": True,
        "enable_meta_mapping": True,
        "meta_mapping": META_MAPPING,
        "column_meta_mapping": COLUMN_META_MAPPING,
        "tag_prefix": "",
        "convert_urns_to_lowercase": False,
    }
    if (artifacts / "sources.json").exists():
        source["sources_path"] = str(artifacts / "sources.json")
    if (artifacts / "run_results.json").exists():
        source["run_results_paths"] = [str(artifacts / "run_results.json")]
    if lite:
        # Lite rejects PATCH proposals: without these two the sink drops lineage silently.
        source["write_semantics"] = "OVERRIDE"
        source["incremental_lineage"] = False
    return {
        "pipeline_name": "upstream-dbt",
        "source": {"type": "dbt", "config": source},
        "sink": sink_config(target),
    }


def run_recipe(target: Target, recipe: dict[str, Any], label: str) -> IngestReport:
    _sdk.prepare(target.sdk_home)
    from datahub.ingestion.run.pipeline import Pipeline

    class OfflinePipeline(Pipeline):
        """DataHub's pipeline, minus its version check: that asks pypi.org and GitHub for the
        latest releases on every run, and Upstream makes no network call DataHub's own sink
        does not need (nothing is fetched at run time; these machines are offline)."""

        def _warn_old_cli_version(self) -> None:
            return

    # DataHub's SQL parsing logs what sqlglot cannot scope as warnings a user cannot act on
    logging.getLogger("sqlglot").setLevel(logging.ERROR)
    try:
        pipeline = OfflinePipeline.create(recipe)
        pipeline.run()
    except Exception as exc:  # noqa: BLE001 - DataHub raises many types; we name the step
        raise BuildFailed(
            f"DataHub ingestion ({label}) failed: {exc}",
            "check the artifacts it reads and the sink in the message above; "
            "with a GMS, check DATAHUB_GMS_URL and DATAHUB_GMS_TOKEN",
        ) from exc
    source, sink = pipeline.source.get_report(), pipeline.sink.get_report()
    if source.failures or sink.failures:
        first = list(source.failures)[:1] or list(sink.failures)[:1]
        raise BuildFailed(
            f"DataHub ingestion ({label}) reported failures: {first}",
            "read the failure above; re-run `make demo` once it is fixed",
        )
    warnings = [str(w) for w in list(sink.warnings)[:20]]
    dropped = int(getattr(sink.warnings, "total_elements", len(sink.warnings)))
    return IngestReport(
        source=label,
        produced=int(source.events_produced),
        written=int(sink.total_records_written),
        dropped=dropped,
        warnings=warnings,
    )


def ingest_dbt(target: Target, artifacts: Path) -> IngestReport:
    missing = [n for n in ("manifest.json", "catalog.json") if not (artifacts / n).exists()]
    if missing:
        raise BuildFailed(
            f"dbt artifacts {missing} are missing from {artifacts}",
            "run the dbt build and `dbt docs generate` first (`make demo` does)",
        )
    report = run_recipe(target, dbt_recipe(target, artifacts), "dbt")
    if not target.gms_url:
        graph = LiteGraph(target.lite_file)
        try:
            report.siblings_linked = len(link_siblings(graph)) // 2
        finally:
            graph.close()
    return report


def ingest_file(target: Target, path: Path) -> IngestReport:
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    files = [f for f in files if f.name != "index.json"]
    if not files:
        raise BuildFailed(
            f"no MCP files found at {path}",
            "pass a datapack folder of *.json MCP files or one such file",
        )
    total = IngestReport(source=f"file:{path.name}")
    for f in files:
        recipe = {
            "pipeline_name": "upstream-file",
            "source": {"type": "file", "config": {"path": str(f)}},
            "sink": sink_config(target),
        }
        one = run_recipe(target, recipe, f"file {f.name}")
        total.produced += one.produced
        total.written += one.written
        total.dropped += one.dropped
        total.warnings.extend(one.warnings)
    return total


def link_siblings(graph: LiteGraph) -> list[Receipt]:
    """Link each dbt node to its warehouse table both ways (primary: the dbt entity).

    The warehouse URN is the dbt URN on the target platform. A dbt source's raw table may exist
    only as a reference (in lineage and freshness assertions); it is linked all the same, as a
    DataHub server would.
    """
    dbt_prefix = "urn:li:dataset:(urn:li:dataPlatform:dbt,"
    dbt = graph.search_prefix(dbt_prefix)
    twins = {
        u: f"urn:li:dataset:(urn:li:dataPlatform:{TARGET_PLATFORM},{u[len(dbt_prefix) :]}"
        for u in dbt
    }
    current = graph.get_aspects(dbt + list(twins.values()), ["siblings"])
    receipts: list[Receipt] = []
    for urn, twin in twins.items():
        for me, other, primary in ((urn, twin, True), (twin, urn, False)):
            want = {"siblings": [other], "primary": primary}
            if current.get(me, {}).get("siblings") != want:
                receipts.append(graph.write_aspect(me, "siblings", want))
    return receipts
