"""The resources every asset runs on: where Upstream's state lives (`upstream`), which DataHub
it reads and writes (`datahub`), the warehouse (`warehouse`), and dbt.

On the embedded default the DataHub resource names the DataHub Lite file in the state folder.
With ``DATAHUB_GMS_URL`` set (and ``DATAHUB_GMS_TOKEN`` where authentication is on) its fields
are ``dagster.EnvVar``s: Dagster reads them in the run's own process (a Kubernetes run pod gets
them from a secret, docs/deploy/dagster.yaml), so neither the address nor the token is ever
stored in run config or the event log, or shown in the UI.

A test hands an asset the graph of its choosing: any object with the same `graph()` method
(`GivenGraph`) stands in for the `datahub` resource.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
from pydantic import Field

from upstream_dagster.datahub import MetadataGraph, Target, connected
from upstream_dagster.settings import Settings
from upstream_dagster.spec import EstateSpec, load_estate
from upstream_dagster.warehouse.dbt_project import DbtProject
from upstream_dagster.warehouse.duckdb_warehouse import Warehouse

# Both write-back assets share one pool of one slot; both write-back jobs carry this tag, which
# a production run queue limits to one (docs/deploy/dagster.yaml).
WRITEBACK_POOL = "datahub_writeback"
WRITEBACK_TAGS = {"upstream/writeback": "true"}
AUTOMATIC_TAG = "upstream/automatic"  # set by the auto-approval sensor, never by a person


class UpstreamResource(dg.ConfigurableResource):  # type: ignore[type-arg]
    """Where Upstream keeps its state and reads its configuration: the state folder, the
    estate file, and the tracked dbt project."""

    state_dir: str = Field(description="The state folder (UPSTREAM_STATE_DIR).")
    estate_file: str = Field(description="The estate file (UPSTREAM_ESTATE).")
    dbt_source_dir: str = Field(description="The tracked dbt project (UPSTREAM_DBT_SOURCE).")
    project_root: str = Field(description="The project checkout (evals, README).")
    feeds_sql: str = Field(
        default="", description="The raw feeds' SQL script (UPSTREAM_FEEDS); empty: the demo's."
    )

    @classmethod
    def of(cls, settings: Settings) -> UpstreamResource:
        return cls(
            state_dir=str(settings.state_dir),
            estate_file=str(settings.estate_file),
            dbt_source_dir=str(settings.dbt_source_dir),
            project_root=str(settings.project_root),
            feeds_sql=str(settings.feeds_sql or ""),
        )

    def settings(self) -> Settings:
        return Settings(
            project_root=Path(self.project_root),
            state_dir=Path(self.state_dir),
            gms_url=None,
            gms_token=None,
            dbt_source_dir=Path(self.dbt_source_dir),
            estate_file=Path(self.estate_file),
            feeds_sql=Path(self.feeds_sql) if self.feeds_sql else None,
        )

    @property
    def state(self) -> Path:
        return Path(self.state_dir)

    def spec(self) -> EstateSpec:
        """estate.yaml, validated (errors name the file, the line and the fix)."""
        return load_estate(Path(self.estate_file))

    def dbt_project(self) -> DbtProject:
        return DbtProject.of(self.settings())


class DataHubResource(dg.ConfigurableResource):  # type: ignore[type-arg]
    """The DataHub runs read and write: a GMS when ``gms_url`` is set (from the
    DATAHUB_GMS_URL and DATAHUB_GMS_TOKEN environment variables), else DataHub Lite."""

    lite_file: str = Field(default="", description="The DataHub Lite file (embedded default).")
    sdk_home: str = Field(default="", description="Where the SDK may write its own files.")
    gms_url: str = Field(default="", description="A DataHub GMS (from DATAHUB_GMS_URL).")
    token_env: str = Field(
        default="DATAHUB_GMS_TOKEN",
        description="The environment variable that holds the GMS token, read when a run "
        "connects: the token itself is never configuration, so no launchpad shows it.",
    )

    def target(self) -> Target:
        return Target(
            Path(self.lite_file),
            Path(self.sdk_home),
            self.gms_url or None,
            os.environ.get(self.token_env) or None,
        )

    @contextmanager
    def graph(self, *, create: bool = False) -> Iterator[MetadataGraph]:
        """The configured DataHub for the length of a block, closed however it ends."""
        with connected(self.target(), create=create) as graph:
            yield graph

    @property
    def backend(self) -> str:
        return self.target().backend


class GivenGraph:
    """A `datahub` resource that hands out one graph a test opened itself (never closed here)."""

    def __init__(self, graph: MetadataGraph, target: Target | None = None) -> None:
        self._graph = graph
        self._target = target

    @contextmanager
    def graph(self, *, create: bool = False) -> Iterator[MetadataGraph]:
        yield self._graph

    def target(self) -> Target:
        if self._target is None:
            raise ValueError("this test graph has no target to ingest into")
        return self._target

    @property
    def backend(self) -> str:
        return self._graph.transport


class WarehouseResource(dg.ConfigurableResource):  # type: ignore[type-arg]
    """The warehouse the estate is built in: a DuckDB file on the embedded default."""

    path: str = Field(description="The warehouse file.")
    dialect: str = Field(default="duckdb", description="The SQL dialect sqlglot reads.")

    def get(self) -> Warehouse:
        return Warehouse(Path(self.path), self.dialect)


def datahub_resource(settings: Settings) -> DataHubResource:
    lite = {"lite_file": str(settings.lite_file), "sdk_home": str(settings.sdk_home)}
    if not os.environ.get("DATAHUB_GMS_URL"):
        return DataHubResource(**lite)
    return DataHubResource(**lite, gms_url=dg.EnvVar("DATAHUB_GMS_URL"))


def resources(settings: Settings) -> dict[str, object]:
    """Every resource but dbt's, built from the settings of this process."""
    return {
        "upstream": UpstreamResource.of(settings),
        "datahub": datahub_resource(settings),
        "warehouse": WarehouseResource(path=str(settings.warehouse)),
    }
