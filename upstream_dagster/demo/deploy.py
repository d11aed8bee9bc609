"""The deployed dbt project: a copy of the tracked project in the state folder.

Dagster builds the copy; remediation later patches the copy. The tracked ``dbt_demo/`` only
changes by commit. The manifest is prepared here, before the code location loads, because
dagster-dbt needs it to define the assets.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from upstream_dagster.errors import BuildFailed
from upstream_dagster.settings import Settings

IGNORED = shutil.ignore_patterns("target", "logs", "dbt_packages", ".user.yml", "__pycache__")


def dbt_executable() -> str:
    # The dbt next to this interpreter, so a venv works without being activated.
    beside = Path(sys.executable).with_name("dbt")
    return str(beside) if beside.exists() else (shutil.which("dbt") or "dbt")


def dbt_env(settings: Settings) -> dict[str, str]:
    env = dict(os.environ)
    env["UPSTREAM_WAREHOUSE"] = str(settings.warehouse)
    env["DBT_PROFILES_DIR"] = str(settings.dbt_project_dir)
    env["DBT_SEND_ANONYMOUS_USAGE_STATS"] = "false"
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def manifest_path(settings: Settings) -> Path:
    return settings.dbt_project_dir / "target" / "manifest.json"


def deploy_project(settings: Settings, *, force: bool = False) -> Path:
    """Copy the tracked dbt project into the state folder (again when ``force``)."""
    target = settings.dbt_project_dir
    if not (settings.dbt_source_dir / "dbt_project.yml").exists():
        raise BuildFailed(
            f"no dbt project at {settings.dbt_source_dir}",
            "run from the project checkout or set UPSTREAM_DBT_SOURCE",
        )
    if force and target.exists():
        shutil.rmtree(target)
    if not target.exists():
        shutil.copytree(settings.dbt_source_dir, target, ignore=IGNORED)
    return target


def run_dbt(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [
        dbt_executable(),
        *args,
        "--project-dir",
        str(settings.dbt_project_dir),
        "--profiles-dir",
        str(settings.dbt_project_dir),
    ]
    return subprocess.run(
        cmd,
        cwd=settings.dbt_project_dir,
        env=dbt_env(settings),
        capture_output=True,
        text=True,
        check=False,
    )


def prepare_manifest(settings: Settings) -> Path:
    """`dbt parse` the deployed copy so the code location can load its assets."""
    done = run_dbt(settings, "parse", "--quiet")
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip().splitlines()[-8:]
        raise BuildFailed(
            "dbt could not parse the deployed project:\n    " + "\n    ".join(tail),
            f"fix the dbt project in {settings.dbt_source_dir} and run `make demo`",
        )
    return manifest_path(settings)


def _stale(manifest: Path, project: Path) -> bool:
    if not manifest.exists():
        return True
    built = manifest.stat().st_mtime
    sources = [
        p
        for pattern in ("*.sql", "*.yml")
        for p in project.rglob(pattern)
        if "target" not in p.relative_to(project).parts
    ]
    return any(p.stat().st_mtime > built for p in sources)


def ensure_ready(settings: Settings) -> Path:
    """Deploy, and parse when the manifest is missing or older than the project's files.

    The code location calls this on every load, so an edit to the deployed project (a patch from
    remediation, a new model) is picked up by the next run.
    """
    deploy_project(settings)
    manifest = manifest_path(settings)
    if _stale(manifest, settings.dbt_project_dir):
        prepare_manifest(settings)
    return manifest
