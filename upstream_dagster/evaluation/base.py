"""The clean estate the evaluation copies, built in a process of its own:
``python -m upstream_dagster.evaluation.base`` with UPSTREAM_STATE_DIR and UPSTREAM_CLOCK set
(`runner.eval_base` does)."""

from __future__ import annotations

from upstream_dagster import runs
from upstream_dagster import settings as settings_mod
from upstream_dagster.warehouse.dbt_project import DbtProject


def main() -> None:
    settings = settings_mod.load()
    project = DbtProject.of(settings)
    project.deploy()
    project.parse()
    runs.run_job(settings, "estate_build")


if __name__ == "__main__":
    main()
