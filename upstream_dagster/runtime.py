"""Process setup shared by the CLI and the tests: the Dagster instance lives in the state folder."""

from __future__ import annotations

import os

import dagster as dg

from upstream_dagster.settings import Settings

DAGSTER_YAML = """\
# Written by Upstream. The embedded default keeps run and event storage in this folder.
telemetry:
  enabled: false
# One write-back at a time: coverage_writeback and incident_writeback run in the
# `datahub_writeback` pool, and every pool defaults to one slot. (The batch claim in gate.sqlite
# keeps each batch at most once.) docs/deploy/dagster.yaml is the production counterpart.
concurrency:
  pools:
    default_limit: 1
"""
# Both write-back assets share one pool of one slot; both write-back jobs carry this tag, which
# a production run queue limits to one (docs/deploy/dagster.yaml).
WRITEBACK_POOL = "datahub_writeback"
WRITEBACK_TAGS = {"upstream/writeback": "true"}


EPHEMERAL_ENV = "UPSTREAM_DAGSTER_EPHEMERAL"
_ephemeral: dict[str, dg.DagsterInstance] = {}


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
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(DAGSTER_YAML)
    os.environ["DAGSTER_HOME"] = str(home)
    instance = dg.DagsterInstance.get()
    storage = instance.event_log_storage
    # Create the write-back pool up front: two write-backs starting together on a pool that
    # does not exist yet race to create it, and one of them fails.
    if storage.supports_global_concurrency_limits and (
        WRITEBACK_POOL not in storage.get_concurrency_keys()
    ):
        storage.set_concurrency_slots(WRITEBACK_POOL, 1)
    return instance


def failure_message(result: dg.ExecuteInProcessResult) -> str:
    """The first failed check's reason, else the first step failure's own message."""
    for check in result.get_asset_check_evaluations():
        if not check.passed and check.description:
            return f"check {check.check_name} failed: {check.description}"
    for event in result.all_events:
        if event.is_step_failure and event.step_failure_data is not None:
            error = event.step_failure_data.error
            while (
                error is not None
                and error.cause is not None
                and (
                    "Error occurred while executing" in error.message
                    or error.cls_name in ("DagsterExecutionStepExecutionError",)
                )
            ):
                error = error.cause
            if error is not None:
                return f"step {event.step_key} failed: {error.message.strip()}"
    return "the run failed; open the Dagster UI (`make ui`) to read its log"
