"""The dbt resource the estate's assets run dbt with."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from functools import cached_property
from importlib import metadata
from pathlib import Path
from typing import Any

from dagster_dbt import DbtCliResource
from packaging import version

from upstream_dagster.warehouse import dbt_worker
from upstream_dagster.warehouse.dbt_chain import Chained, run_chain


class DeployedDbt(DbtCliResource):
    """dagster-dbt's dbt resource, less three costs each build paid for nothing Upstream reads:
    dagster-dbt asks the dbt executable its version in a subprocess once per run (the dbt beside
    this interpreter is the dbt-core installed here: its version is read from the package), and
    opens a dbt adapter in this process for every dbt command, which serves only its optional
    row-count and column-metadata fetches (Upstream fetches neither; the ingestion reads the
    catalog). About 3 s of CPU per build run, measured. The commands the ingestion runs after
    a build share one dbt process (`chain`), and with `upstream-dbt` as its executable the build
    itself runs in this process's dbt worker."""

    @property
    def _beside(self) -> bool:
        return dbt_worker.serves(self.dbt_executable)

    @cached_property
    def _cli_version(self) -> version.Version:
        if self._beside:
            return version.parse(metadata.version("dbt-core"))
        return super()._cli_version

    def _initialize_dbt_core_adapter(self, args: Sequence[str]) -> Any:
        return None

    def cli(self, args: Sequence[str], **kwargs: Any) -> Any:
        """dagster-dbt's dbt command; with `upstream-dbt` as the executable, this process's dbt
        worker runs it (`dbt_worker.listen`), so a build pays no dbt start-up."""
        if self._beside:
            dbt_worker.listen()
        return super().cli(args, **kwargs)

    def chain(self, *commands: Sequence[str], manifest: dict[str, Any]) -> Chained:
        """Run ``commands`` in order into one new target folder: in one dbt process when the
        dbt is the one installed beside this interpreter, else one CLI invocation each. Every
        command runs whatever the one before it said; `Chained.succeeded` says which did."""
        project = Path(self.project_dir)
        target = project / "target" / f"upstream-{uuid.uuid4().hex[:12]}"
        if self._beside:
            profiles = Path(self.profiles_dir) if self.profiles_dir else None
            return run_chain(project, profiles, target, [list(c) for c in commands])
        done = []
        for command in commands:
            invocation = self.cli(
                list(command), manifest=manifest, raise_on_error=False, target_path=target
            )
            done.append(invocation.is_successful())
        return Chained(target, tuple(done), "")
