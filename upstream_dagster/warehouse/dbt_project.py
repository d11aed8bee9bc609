"""The deployed dbt project: a copy of the tracked project in the state folder.

Dagster builds the copy; remediation later patches the copy. The tracked ``dbt_demo/`` only
changes by commit. The manifest is prepared here, before the code location loads, because
dagster-dbt needs it to define the assets.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from upstream_dagster.errors import BuildFailed
from upstream_dagster.settings import Settings
from upstream_dagster.warehouse import dbt_worker, names

IGNORED = shutil.ignore_patterns("target", "logs", "dbt_packages", ".user.yml", "__pycache__")


CLOCK_MACRO_NAME = "duckdb__current_timestamp"
CLOCK_MACRO = """{#-
  Supplied by Upstream when it deploys the project (the tracked project is not changed): the
  one clock. dbt's source freshness compares max(loaded_at) with current_timestamp(); when
  UPSTREAM_CLOCK pins Upstream's clock, dbt reads the same instant, so a pinned run is
  reproducible.
-#}
{% macro duckdb__current_timestamp() -%}
  {%- set pinned = env_var('UPSTREAM_CLOCK', '') -%}
  {%- if pinned -%}
    cast(cast('{{ pinned | replace("Z", "") }}' as timestamptz) as timestamp)
  {%- else -%}
    cast(now() as timestamp)
  {%- endif -%}
{%- endmacro %}
"""


def _project_config(project: Path) -> dict[str, Any]:
    try:
        config = yaml.safe_load((project / "dbt_project.yml").read_text()) or {}
    except (OSError, yaml.YAMLError):
        return {}
    return config if isinstance(config, dict) else {}


def _macro_paths(project: Path) -> list[str]:
    paths = _project_config(project).get("macro-paths")
    return [str(p) for p in paths] if isinstance(paths, list) and paths else ["macros"]


def dbt_executable() -> str:
    # The dbt next to this interpreter, so a venv works without being activated.
    beside = dbt_worker.INSTALLED
    return str(beside) if beside.exists() else (shutil.which("dbt") or "dbt")


def build_executable() -> str:
    """The dbt executable dagster-dbt is given: `upstream-dbt` (its commands run in this
    process's dbt worker) when it is installed beside dbt-core, else `dbt_executable()`."""
    shim = dbt_worker.SHIM
    return str(shim) if shim.exists() and dbt_worker.INSTALLED.exists() else dbt_executable()


@dataclass(frozen=True)
class DbtProject:
    """A tracked dbt project (``source``), its deployed copy (``project_dir``) and the
    warehouse file its profile writes to."""

    source: Path
    project_dir: Path
    warehouse: Path

    @classmethod
    def of(cls, settings: Settings) -> DbtProject:
        return cls(settings.dbt_source_dir, settings.dbt_project_dir, settings.warehouse)

    @property
    def manifest_path(self) -> Path:
        return self.project_dir / "target" / "manifest.json"

    def manifest(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.manifest_path.read_text())
        return data

    @property
    def warehouse_path(self) -> str:
        """The warehouse as the profile sees it: relative to the project, where dbt runs. dbt
        parses again from scratch when the profile's connection changes, and an absolute path
        would change it in every sandbox copy; relative, a copy keeps the deployed project's
        parse (seconds per dbt command)."""
        return os.path.relpath(self.warehouse, self.project_dir)

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["UPSTREAM_WAREHOUSE"] = self.warehouse_path
        env["DBT_PROFILES_DIR"] = str(self.project_dir)
        env["DBT_SEND_ANONYMOUS_USAGE_STATS"] = "false"
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        return env

    def deploy(self, *, force: bool = False) -> Path:
        """Copy the tracked dbt project into the state folder (again when ``force``)."""
        if not (self.source / "dbt_project.yml").exists():
            raise BuildFailed(
                f"no dbt project at {self.source}",
                "run from the project checkout or set UPSTREAM_DBT_SOURCE",
            )
        if force and self.project_dir.exists():
            shutil.rmtree(self.project_dir)
        if not self.project_dir.exists():
            shutil.copytree(self.source, self.project_dir, ignore=IGNORED)
            self._supply_clock()
            self._supply_profile()
        return self.project_dir

    def _supply_profile(self) -> None:
        """Point dbt at Upstream's warehouse, whatever the project's own profile says: the
        deployed copy gets a profiles.yml with the project's profile name and one DuckDB target
        whose path is the warehouse (UPSTREAM_WAREHOUSE). What the project's own DuckDB target
        sets besides its path (extensions, settings, attached databases) is kept."""
        config = _project_config(self.project_dir)
        name = str(config.get("profile") or config.get("name") or "upstream")
        own: dict[str, Any] = {}
        theirs = self.project_dir / "profiles.yml"
        if theirs.exists():
            try:
                profile = (yaml.safe_load(theirs.read_text()) or {}).get(name) or {}
                outputs = profile.get("outputs") or {}
                own = dict(outputs.get(profile.get("target")) or next(iter(outputs.values()), {}))
            except (yaml.YAMLError, AttributeError, TypeError):
                own = {}
        if own.get("type", "duckdb") != "duckdb":
            raise BuildFailed(
                f"the dbt project's profile {name!r} targets {own.get('type')!r}",
                "Upstream builds dbt-duckdb projects today: point it at a DuckDB target",
            )
        target = {k: v for k, v in own.items() if k not in ("path", "type", "database")}
        target = {"type": "duckdb", "path": "{{ env_var('UPSTREAM_WAREHOUSE') }}", **target}
        target.setdefault("threads", 2)
        body = {name: {"target": "upstream", "outputs": {"upstream": target}}}
        theirs.write_text(
            "# Supplied by Upstream when it deployed the project (the tracked project is not\n"
            "# changed): dbt writes to Upstream's warehouse, UPSTREAM_WAREHOUSE.\n"
            + yaml.safe_dump(body, sort_keys=False)
        )

    def _supply_clock(self) -> None:
        """Give the deployed copy Upstream's clock: dbt's current_timestamp() reads
        UPSTREAM_CLOCK when it is pinned, so source freshness and the models agree with every
        other time Upstream computes. Left alone when the project defines its own."""
        macros = [self.project_dir / p for p in _macro_paths(self.project_dir)]
        for folder in macros:
            for path in folder.rglob("*.sql") if folder.is_dir() else ():
                if CLOCK_MACRO_NAME in path.read_text(errors="replace"):
                    return
        macros[0].mkdir(parents=True, exist_ok=True)
        (macros[0] / "upstream_clock.sql").write_text(CLOCK_MACRO)

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        cmd = [
            dbt_executable(),
            *args,
            "--project-dir",
            str(self.project_dir),
            "--profiles-dir",
            str(self.project_dir),
        ]
        if dbt_worker.serves(cmd[0]):
            return dbt_worker.run(cmd[1:], self.project_dir, self.env())
        return dbt_worker.captured(cmd, self.project_dir, self.env())

    def parse(self) -> Path:
        """`dbt parse` the deployed copy so the code location can load its assets."""
        done = self.run("parse", "--quiet")
        if done.returncode != 0:
            tail = (done.stdout + done.stderr).strip().splitlines()[-8:]
            raise BuildFailed(
                "dbt could not parse the deployed project:\n    " + "\n    ".join(tail),
                f"fix the dbt project in {self.source} and run `make demo`",
            )
        return self.manifest_path

    def stale(self) -> bool:
        """Whether the manifest is missing or older than one of the project's files."""
        if not self.manifest_path.exists():
            return True
        built = self.manifest_path.stat().st_mtime
        sources = [
            p
            for pattern in ("*.sql", "*.yml")
            for p in self.project_dir.rglob(pattern)
            if "target" not in p.relative_to(self.project_dir).parts
        ]
        return any(p.stat().st_mtime > built for p in sources)

    def ensure_ready(self) -> Path:
        """Deploy, and parse when the manifest is missing or older than the project's files.

        The code location calls this on every load, so an edit to the deployed project (a patch
        from remediation, a new model) is picked up by the next run.
        """
        self.deploy()
        if self.stale():
            self.parse()
        return self.manifest_path

    def results(self) -> dict[str, str]:
        """unique id -> status of the last dbt command's run_results.json."""
        path = self.project_dir / "target" / "run_results.json"
        if not path.exists():
            return {}
        return {r["unique_id"]: r["status"] for r in json.loads(path.read_text())["results"]}

    def node_of(self, relation: str) -> dict[str, Any] | None:
        """The dbt model or source DataHub names ``schema.table`` (a source by its name, not
        its identifier), else the one whose warehouse relation it is."""
        manifest = self.manifest()
        nodes = [
            props
            for props in [*manifest["nodes"].values(), *manifest["sources"].values()]
            if props["resource_type"] in ("model", "source", "seed")
        ]
        for name in (names.datahub_name, names.table_name):
            found = next((p for p in nodes if name(p) == relation.lower()), None)
            if found is not None:
                return dict(found)
        return None


# A column key that means tests but is not one dbt reads (dbt 1.11 keeps it as an unknown key
# and says nothing): `data-tests`, `data_test`, `test`.
_TESTS_LOOKALIKE = re.compile(r"(data[-_]?)?tests?")
_READ_AS_TESTS = {"data_tests", "tests"}  # what dbt turns into test nodes (never left on a column)


def unread_test_keys(manifest: dict[str, Any]) -> list[str]:
    """Each column whose tests dbt never read, and why: a line naming the file, the node, the
    column, the key it carries, and the one dbt reads."""
    out = []
    nodes = [*manifest.get("nodes", {}).values(), *manifest.get("sources", {}).values()]
    for node in nodes:
        where = str(node.get("patch_path") or node.get("original_file_path") or "")
        for column in (node.get("columns") or {}).values():
            for key in column:
                if _TESTS_LOOKALIKE.fullmatch(key) and key not in _READ_AS_TESTS:
                    out.append(
                        f"{where.partition('://')[2] or where}: {node.get('resource_type')} "
                        f"{node.get('name')}, column {column.get('name')}: `{key}` is not a key "
                        "dbt reads, so these tests never ran (write `data_tests`)"
                    )
    return out


def copy_artifacts(src: Path, dst_dir: Path, *names: str) -> None:
    """dbt's artifacts ``names`` from ``src`` to ``dst_dir`` (those dbt wrote)."""
    dst_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        if (src / name).exists():
            shutil.copy2(src / name, dst_dir / name)
