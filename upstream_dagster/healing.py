"""`upstream heal`: the clean estate back, rebuilding only what a break or a fix changed.

The deployed dbt project is re-deployed from the tracked one (so a fix applied to the deployed
copy does not hide the next occurrence), a seed whose table changed shape is reloaded with a
full refresh (dbt reloads a seed into the table it finds, which keeps a renamed column), the raw
feeds Upstream loads are loaded again, and the refresh rebuilds what differs from the last build
and everything downstream of it. What Upstream wrote into DataHub is kept unless ``forget``.
"""

from __future__ import annotations

from dataclasses import dataclass

import dagster as dg

from upstream_dagster import runs
from upstream_dagster.datahub import Target, connected
from upstream_dagster.datahub.signals import forget_memory
from upstream_dagster.definitions import build
from upstream_dagster.defs.estate_jobs import RAW_FEEDS, REBUILD_TAG
from upstream_dagster.settings import Settings
from upstream_dagster.warehouse import built_state
from upstream_dagster.warehouse.dbt_project import DbtProject

MEMORY_PROPERTIES = ("fragilityScore", "lastRootCause", "mttrMinutes", "knownFailureModes")


@dataclass(frozen=True)
class Healed:
    reseeded: list[str]  # seeds reloaded with a full refresh
    rebuilt: str  # the refresh's dbt selection ("": the whole project)
    run_id: str
    removed: int = 0  # memory properties removed (with forget)


def feed_keys(settings: Settings) -> list[dg.AssetKey]:
    """The raw feeds Upstream loads (none when something else loads the project's sources)."""
    defs = build(settings)
    job = defs.resolve_job_def("estate_build")
    feeds = dg.AssetSelection.groups(RAW_FEEDS).resolve(defs.resolve_asset_graph())
    return sorted(feeds & set(job.asset_layer.executable_asset_keys), key=str)


def heal(settings: Settings, forget: bool = False) -> Healed:
    project = DbtProject.of(settings)
    project.deploy(force=True)
    project.parse()
    reseeded = built_state.seeds_out_of_shape(project)
    built_state.full_refresh_seeds(project, reseeded)
    feeds = feed_keys(settings)
    if feeds:
        runs.run_job(settings, "estate_build", selection=feeds)
    result = runs.run_job(settings, "estate_refresh")
    (settings.state_dir / "scenario.json").unlink(missing_ok=True)
    removed = 0
    if forget:
        with connected(Target.of(settings)) as graph:
            removed = sum(1 for w in forget_memory(graph, MEMORY_PROPERTIES) if w.receipt.written)
    rebuilt = result.dagster_run.tags.get(REBUILD_TAG, "")
    return Healed(reseeded, rebuilt, result.run_id, removed)
