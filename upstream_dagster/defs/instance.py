"""The Dagster instance in the state folder and the gate's store its runs share.

Everything a command needs to read the journal (`upstream queue`, `upstream show`) and nothing
more: no definitions, no dbt project, no DataHub backend, so such a command starts in about
the time ``import dagster`` takes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import dagster as dg

from upstream_dagster.settings import Settings
from upstream_dagster.state.store import GateStore

if TYPE_CHECKING:
    from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage

# Both write-back assets share one pool of one slot; both write-back jobs carry this tag, which
# a production run queue limits to one (docs/deploy/dagster.yaml).
WRITEBACK_POOL = "datahub_writeback"
# Every step that opens the warehouse takes this pool's one slot (dagster.yaml's default limit):
# a `plan` while the daemon rebuilds the estate waits its turn, and a build waits for it,
# instead of one failing on DuckDB's file lock.
WAREHOUSE_POOL = "warehouse"
DAGSTER_YAML = """\
# Written by Upstream. The embedded default keeps run and event storage in this folder.
telemetry:
  enabled: false
# No "join the community" dialog over the UI a reviewer works in.
nux:
  enabled: false
# One write-back at a time: Upstream's own write-back lock in gate.sqlite serializes them (and
# keeps each batch at most once); the `datahub_writeback` pool, one slot, is a first line.
# docs/deploy/dagster.yaml is the production counterpart.
concurrency:
  pools:
    default_limit: 1
"""
EPHEMERAL_ENV = "UPSTREAM_DAGSTER_EPHEMERAL"
_ephemeral: dict[str, dg.DagsterInstance] = {}
# One instance per DAGSTER_HOME for the life of the process: Dagster checks every storage's
# schema revision (hundreds of migration scripts read) each time it opens one, which was
# half of what `upstream queue` took when it opened it twice.
_opened: dict[str, dg.DagsterInstance] = {}
_read: dict[str, EventLog] = {}  # the embedded event log opened alone, per state folder
_pooled: set[int] = set()  # the instances whose pools are made


def dagster_instance(settings: Settings) -> dg.DagsterInstance:
    if os.environ.get(EPHEMERAL_ENV) == "1":
        # An evaluation case's throwaway copy of the estate: its runs live in memory (one
        # instance per state folder, for the life of the process), not in a DAGSTER_HOME that
        # is deleted with the copy. Saves the run storage's commits on every event.
        key = str(settings.state_dir)
        if key not in _ephemeral:
            _ephemeral[key] = dg.DagsterInstance.ephemeral()
        return _ephemeral[key]
    home = settings.dagster_home
    os.environ["DAGSTER_HOME"] = str(home)
    config = home / "dagster.yaml"
    if not config.exists():
        home.mkdir(parents=True, exist_ok=True)
        config.write_text(DAGSTER_YAML)
    stat = config.stat()  # a dagster.yaml written anew (another storage) opens anew
    key = f"{home}:{stat.st_mtime_ns}:{stat.st_size}"
    if key not in _opened:
        _opened[key] = dg.DagsterInstance.get()
    return _opened[key]


class Journal(Protocol):
    """What reading the journal needs of Dagster: its event log's materializations."""

    def fetch_materializations(
        self, records_filter: dg.AssetKey | dg.AssetRecordsFilter, limit: int
    ) -> dg.EventRecordsResult: ...

    def get_latest_materialization_event(
        self, asset_key: dg.AssetKey
    ) -> dg.EventLogEntry | None: ...


@dataclass(frozen=True)
class EventLog:
    """The journal of the embedded default (Dagster's SQLite event log in the state folder),
    opened alone: no run or schedule storage, whose modules and schema checks were half of what
    `upstream queue` and `upstream show` took."""

    storage: SqliteEventLogStorage

    def fetch_materializations(
        self, records_filter: dg.AssetKey | dg.AssetRecordsFilter, limit: int
    ) -> dg.EventRecordsResult:
        return self.storage.fetch_materializations(records_filter, limit)

    def get_latest_materialization_event(self, asset_key: dg.AssetKey) -> dg.EventLogEntry | None:
        return self.storage.get_latest_materialization_events([asset_key]).get(asset_key)


def journal(settings: Settings) -> Journal:
    """The journal, for a command that only reads it: the embedded SQLite event log opened
    alone when the state folder's dagster.yaml is Upstream's own default, else the instance."""
    home = settings.dagster_home
    config = home / "dagster.yaml"
    index = home / "history" / "runs" / "index.db"
    alone = config.exists() and index.exists() and settings.embedded_storage
    if os.environ.get(EPHEMERAL_ENV) == "1" or not alone:  # else read where the instance says
        return dagster_instance(settings)
    if str(index) not in _read:
        from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage

        _read[str(index)] = EventLog(SqliteEventLogStorage(str(index.parent)))
    return _read[str(index)]


def read_gate_store(settings: Settings, read: Journal) -> GateStore:
    """The gate's store beside a journal ``journal`` opened: the embedded event log's
    deployment keeps it in the state folder (or UPSTREAM_GATE_DB)."""
    if isinstance(read, EventLog):
        return GateStore.at(settings.gate_db, settings.state_dir)
    return gate_store(settings)


def run_instance(settings: Settings) -> dg.DagsterInstance:
    """The instance, ready for runs: the write-back and warehouse pools made before any run
    starts (two runs starting together on a pool that does not exist yet race to create it,
    and one of them fails). A command that only reads the journal skips this."""
    instance = dagster_instance(settings)
    if os.environ.get(EPHEMERAL_ENV) == "1":
        return instance  # an evaluation case's instance in memory: one process, one run a time
    storage = instance.event_log_storage
    if id(instance) not in _pooled and storage.supports_global_concurrency_limits:
        for pool in {WRITEBACK_POOL, WAREHOUSE_POOL} - set(storage.get_concurrency_keys()):
            storage.set_concurrency_slots(pool, 1)
        _pooled.add(id(instance))
    return instance


def gate_db(settings: Settings, instance: dg.DagsterInstance | None) -> str:
    """The gate's store for runs on ``instance``: UPSTREAM_GATE_DB when the deployment sets it,
    else the PostgreSQL database Dagster's own storage uses (every run pod of a cluster sees
    it), else "" (gate.sqlite in the state folder, for one machine)."""
    if settings.gate_db:
        return settings.gate_db
    storage = getattr(instance, "run_storage", None) if instance is not None else None
    url = getattr(storage, "postgres_url", None)
    return str(url) if url else ""


def gate_store(settings: Settings) -> GateStore:
    """The gate's store the runs of this deployment share (the instance is opened only when its
    PostgreSQL may hold it)."""
    known = GateStore.without_dagster(settings)
    if known is not None:
        return known
    return GateStore.at(gate_db(settings, dagster_instance(settings)), settings.state_dir)
