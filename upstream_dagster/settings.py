"""The one settings module: where state lives and which DataHub to talk to.

Everything is read from the environment when asked for, never at import, so a test can point
a process at its own state folder by setting variables before it calls :func:`load`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import yaml

PROJECT_ROOT = Path(__file__).resolve().parent.parent


# A dagster.yaml naming any of these keeps Dagster's storage elsewhere.
STORAGE_KEYS = ("storage", "event_log_storage", "run_storage", "schedule_storage")


@dataclass(frozen=True)
class Settings:
    project_root: Path
    state_dir: Path
    gms_url: str | None
    gms_token: str | None
    dbt_source_dir: Path
    estate_file: Path
    # SQL that loads the raw feeds of an estate other than the demo (UPSTREAM_FEEDS); None: the
    # demo's own generator.
    feeds_sql: Path | None = None
    # Where the gate keeps its state (UPSTREAM_GATE_DB, a PostgreSQL URL); None: the database
    # Dagster's storage uses when that is PostgreSQL, else gate.sqlite in the state folder.
    gate_db: str | None = None
    # The policy digest the deployment pins (UPSTREAM_POLICY_PIN): only it may be in force.
    policy_pin: str | None = None
    # The actor a DataHub server with authentication off answers as (DATAHUB_SYSTEM_CLIENT_ID,
    # the server's own setting of that name; DataHub's default below): it names no reviewer.
    datahub_system_client_id: str = "__datahub_system"

    # Everything Upstream keeps on disk lives under state_dir (git-ignored), never in $HOME.
    @property
    def lite_file(self) -> Path:
        return self.state_dir / "datahub-lite.sqlite"

    @property
    def warehouse(self) -> Path:
        return self.state_dir / "warehouse.duckdb"

    @property
    def dagster_home(self) -> Path:
        return self.state_dir / "dagster_home"

    @property
    def embedded_storage(self) -> bool:
        """Whether Dagster keeps its storage in the state folder: its dagster.yaml is Upstream's
        own default, or not written yet. A deployment's dagster.yaml naming a storage (PostgreSQL
        in production) is read through the instance, which says where."""
        config = self.dagster_home / "dagster.yaml"
        if not config.exists():
            return True
        try:
            declared = yaml.safe_load(config.read_text()) or {}
        except yaml.YAMLError:
            return False  # the instance says what is wrong with it
        return isinstance(declared, dict) and not any(key in declared for key in STORAGE_KEYS)

    @property
    def dbt_project_dir(self) -> Path:
        """The deployed copy of the dbt project that Dagster builds and remediation patches."""
        return self.state_dir / "dbt_project"

    @property
    def dbt_manifest(self) -> Path:
        """The deployed project's manifest: what each dbt node is called in the warehouse."""
        return self.dbt_project_dir / "target" / "manifest.json"

    @property
    def artifacts_dir(self) -> Path:
        """dbt artifacts captured for DataHub's dbt source (run_results right after the build)."""
        return self.state_dir / "dbt_artifacts"

    @property
    def sdk_home(self) -> Path:
        """Where the DataHub SDK may write its telemetry file instead of the user's home."""
        return self.state_dir / "sdk_home"

    @property
    def backend(self) -> str:
        return "gms" if self.gms_url else "lite"


def load() -> Settings:
    root = Path(os.environ.get("UPSTREAM_PROJECT_ROOT", PROJECT_ROOT)).resolve()
    state = Path(os.environ.get("UPSTREAM_STATE_DIR", root / ".upstream")).resolve()
    dbt_src = Path(os.environ.get("UPSTREAM_DBT_SOURCE", root / "dbt_demo")).resolve()
    estate = Path(os.environ.get("UPSTREAM_ESTATE", root / "estate.yaml")).resolve()
    feeds = os.environ.get("UPSTREAM_FEEDS")
    return Settings(
        project_root=root,
        state_dir=state,
        gms_url=os.environ.get("DATAHUB_GMS_URL") or None,
        gms_token=os.environ.get("DATAHUB_GMS_TOKEN") or None,
        dbt_source_dir=dbt_src,
        estate_file=estate,
        feeds_sql=Path(feeds).resolve() if feeds else None,
        gate_db=os.environ.get("UPSTREAM_GATE_DB") or None,
        policy_pin=os.environ.get("UPSTREAM_POLICY_PIN") or None,
        datahub_system_client_id=os.environ.get("DATAHUB_SYSTEM_CLIENT_ID") or "__datahub_system",
    )
