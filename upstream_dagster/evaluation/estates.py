"""Which estate a case runs on: the configured one, or the one its file names ('demo', a
folder under evals/estates, or any folder holding estate.yaml and dbt/), each with a state
folder of its own."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from upstream_dagster.errors import UpstreamError
from upstream_dagster.settings import Settings


def case_estate(root: Path, name: str) -> Path:
    """The folder of the estate a case names: 'demo' is the project's own."""
    if name == "demo":
        return root
    for folder in (root / "evals" / "estates" / name, root / name, Path(name)):
        if (folder / "estate.yaml").exists():
            return folder.resolve()
    raise UpstreamError(
        f"the case names the estate {name!r}, which has no estate.yaml",
        "name 'demo', a folder under evals/estates, or a folder holding estate.yaml and dbt/",
    )


def estate_env(settings: Settings) -> dict[str, str]:
    """The variables that select ``settings``' estate in another process."""
    return {
        "UPSTREAM_DBT_SOURCE": str(settings.dbt_source_dir),
        "UPSTREAM_ESTATE": str(settings.estate_file),
        "UPSTREAM_PROJECT_ROOT": str(settings.project_root),
        # empty: no feeds script, even where the configured estate has one
        "UPSTREAM_FEEDS": str(settings.feeds_sql or ""),
    }


def estate_settings(settings: Settings, name: str | None) -> Settings:
    """The settings a case runs under: the configured estate, or the one it names (its own
    state folder under the configured one's)."""
    if name is None:
        return settings
    folder = case_estate(settings.project_root, name)
    if folder == settings.project_root.resolve():
        dbt, estate = folder / "dbt_demo", folder / "estate.yaml"
        feeds = None
    else:
        dbt, estate = folder / "dbt", folder / "estate.yaml"
        feeds = folder / "feeds.sql" if (folder / "feeds.sql").exists() else None
    if (dbt.resolve(), estate.resolve()) == (settings.dbt_source_dir, settings.estate_file):
        return settings
    return replace(
        settings,
        state_dir=settings.state_dir / "estates" / folder.name,
        dbt_source_dir=dbt.resolve(),
        estate_file=estate.resolve(),
        feeds_sql=feeds.resolve() if feeds else None,
    )
