"""The resources every asset runs on: where Upstream's state lives (`upstream`), which DataHub
it reads and writes (`datahub`), the warehouse (`warehouse`), and dbt.

They are fixed by the deployment: built from the settings of the process that loads the code
location (its environment: UPSTREAM_*, DATAHUB_GMS_URL), with an empty config schema, so a
launch (the launchpad, a stored run config, a sensor) cannot point a run at another estate,
another DataHub, another token variable, warehouse or gate store: Dagster refuses such run
config before the run starts. On the embedded default the DataHub resource names the DataHub
Lite file in the state folder. With ``DATAHUB_GMS_URL`` set (and ``DATAHUB_GMS_TOKEN`` where
authentication is on) Dagster reads them in the run's own process (a Kubernetes run pod gets
them from a secret, docs/deploy/dagster.yaml), so neither the address nor the token is ever
stored in run config or the event log, or shown in the UI.

A test hands an asset the graph of its choosing: any object with the same `graph()` method
(`GivenGraph`) stands in for the `datahub` resource.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dagster as dg
from dagster._core.storage.fs_io_manager import PickledObjectFilesystemIOManager
from pydantic import Field

from upstream_dagster.datahub import MetadataGraph, Target, connected
from upstream_dagster.defs.instance import WAREHOUSE_POOL as WAREHOUSE_POOL
from upstream_dagster.defs.instance import gate_db
from upstream_dagster.settings import Settings
from upstream_dagster.spec import EstateSpec, load_estate
from upstream_dagster.state import lease
from upstream_dagster.state.store import GateStore
from upstream_dagster.warehouse.dbt_project import DbtProject
from upstream_dagster.warehouse.duckdb_warehouse import Warehouse

# Both write-back jobs carry this tag (and share the pool `instance.WRITEBACK_POOL`), which a
# production run queue limits to one (docs/deploy/dagster.yaml).
WRITEBACK_TAGS = {"upstream/writeback": "true"}
AUTOMATIC_TAG = "upstream/automatic"  # set by the auto-approval sensor, never by a person
TOKEN_ENV = "DATAHUB_GMS_TOKEN"  # the deployment's own DataHub token, read where a run connects


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
    gate_db: str = Field(
        default="", description="The gate's store (a PostgreSQL URL); empty: gate.sqlite."
    )
    policy_pin: str = Field(default="", description="The policy the deployment pins.")

    @classmethod
    def of(cls, settings: Settings, gate_db: str = "") -> UpstreamResource:
        return cls(
            state_dir=str(settings.state_dir),
            estate_file=str(settings.estate_file),
            dbt_source_dir=str(settings.dbt_source_dir),
            project_root=str(settings.project_root),
            feeds_sql=str(settings.feeds_sql or ""),
            gate_db=gate_db or settings.gate_db or "",
            policy_pin=settings.policy_pin or "",
        )

    @property
    def gate(self) -> GateStore:
        """The gate's store every run of this deployment shares."""
        return GateStore.at(self.gate_db, self.state)

    @property
    def pin(self) -> str | None:
        return self.policy_pin or None

    def settings(self) -> Settings:
        return Settings(
            project_root=Path(self.project_root),
            state_dir=Path(self.state_dir),
            gms_url=None,
            gms_token=None,
            dbt_source_dir=Path(self.dbt_source_dir),
            estate_file=Path(self.estate_file),
            feeds_sql=Path(self.feeds_sql) if self.feeds_sql else None,
            gate_db=self.gate_db or None,
            policy_pin=self.policy_pin or None,
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

    def target(self) -> Target:
        """The deployment's DataHub; its token is always DATAHUB_GMS_TOKEN of the run's own
        process, never a variable a launch names."""
        return Target(
            Path(self.lite_file),
            Path(self.sdk_home),
            self.gms_url or None,
            os.environ.get(TOKEN_ENV) or None,
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
    manifest: str = Field(
        default="", description="The built dbt project's manifest (its relations' real names)."
    )

    def get(self) -> Warehouse:
        return Warehouse(
            Path(self.path), self.dialect, manifest=Path(self.manifest) if self.manifest else None
        )


@dataclass(frozen=True)
class ReviewerToken:
    """A reviewer's own DataHub token, carried by the one run `upstream approve` launches in its
    own process (``identity: datahub``): the run asks the deployment's DataHub whose it is. It
    is never configuration, never stored, never shown; a launchpad run carries none."""

    value: str = field(default="", repr=False)


class Pickles(PickledObjectFilesystemIOManager):
    """Asset values pickled in the instance's storage folder, without Dagster's ``path``
    metadata entry: a partition's path holds its whole key, and one long unbroken value pushes
    every other value of an asset's metadata past the UI's right edge."""

    def get_metadata(self, context: dg.OutputContext, obj: Any) -> dict[str, Any]:
        where = "the instance's storage folder, under the asset key"
        if context.has_asset_partitions:
            where += " and the partition key"
        return {"path": dg.MetadataValue.text(where)}


def datahub_resource(settings: Settings) -> DataHubResource:
    lite = {"lite_file": str(settings.lite_file), "sdk_home": str(settings.sdk_home)}
    if not os.environ.get("DATAHUB_GMS_URL"):
        return DataHubResource(**lite)
    return DataHubResource(**lite, gms_url=os.environ["DATAHUB_GMS_URL"])


def writeback_lock(
    upstream: UpstreamResource, context: dg.AssetExecutionContext, purpose: str
) -> AbstractContextManager[lease.Lease]:
    """Upstream's write-back lock for the length of a step, waiting (and saying so in the run's
    log) while another write-back holds it."""
    return lease.held(
        upstream.gate,
        context.run_id,
        purpose,
        on_wait=lambda holder: context.log.info(f"waiting for {holder.describe()}"),
    )


def fixed(value: Any, description: str) -> dg.ResourceDefinition:
    """A resource the deployment fixes: an empty config schema, so a launch that tries to
    configure it is refused by Dagster before the run starts."""
    return dg.ResourceDefinition(
        resource_fn=lambda _: value, config_schema={}, description=description
    )


def resources(settings: Settings) -> dict[str, dg.ResourceDefinition]:
    """Every resource but dbt's, fixed from the settings of this process."""
    upstream = UpstreamResource.of(settings)

    def upstream_for(context: dg.InitResourceContext) -> UpstreamResource:
        db = gate_db(settings, context.instance)
        return upstream if db == upstream.gate_db else UpstreamResource.of(settings, db)

    fixed_here = "fixed by the deployment (its environment); a launch cannot change it"
    return {
        "upstream": dg.ResourceDefinition(
            resource_fn=upstream_for,
            config_schema={},
            description=f"State folder, estate file, gate store: {fixed_here}",
        ),
        "datahub": fixed(datahub_resource(settings), f"Which DataHub: {fixed_here}"),
        "warehouse": fixed(
            WarehouseResource(path=str(settings.warehouse), manifest=str(settings.dbt_manifest)),
            f"The warehouse: {fixed_here}",
        ),
        "reviewer_token": fixed(
            ReviewerToken(), "A reviewer's DataHub token: only `upstream approve` carries one"
        ),
        "io_manager": dg.IOManagerDefinition(
            resource_fn=lambda context: Pickles(base_dir=context.instance.storage_directory()),  # type: ignore[no-untyped-call]
            config_schema={},
            description="Asset values in the instance's storage folder: fixed, so no launch "
            "can make a run read values from another folder",
        ),
    }
