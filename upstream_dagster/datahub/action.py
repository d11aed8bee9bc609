"""An action for DataHub's Actions framework: DataHub pushes, Upstream investigates at once.

The polling sensor (`failing_assertions`) stays the default. With a DataHub server and its
Actions framework (acryl-datahub-actions, reading DataHub's event stream), this action reacts to

- an assertion failure (an Entity Change Event ``RUN``/``COMPLETED`` whose
  ``assertionResult`` is FAILURE or ERROR, as DataHub OSS sends it, or a Metadata Change Log of
  ``assertionRunEvent`` with such a result): it adds the
  incident's dynamic partition and launches the ``reliability`` job for it through Dagster's
  GraphQL API, with the same partition key the sensor would use, so the two never investigate
  one failure twice (an existing partition is not launched again);
- a schema change that can break a reader (``TECHNICAL_SCHEMA`` REMOVE or MODIFY on a dataset):
  it launches ``estate_refresh`` so every check runs now rather than at the next build; a check
  the change broke then fails and comes back as an assertion failure.

Run it with ``datahub actions -c`` and a pipeline file naming
``upstream_dagster.datahub.action:UpstreamAction`` (see docs/deploy/datahub-action.yaml).
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field, replace
from typing import Any

from upstream_dagster.datahub import _sdk
from upstream_dagster.datahub.action_reads import (
    CheckName,
    RunStamp,
    check_of_from,
    check_of_graph,
    run_stamp_from,
)
from upstream_dagster.datahub.incidents import incident_key
from upstream_dagster.datahub.model import AssertionRun
from upstream_dagster.errors import UpstreamError

log = logging.getLogger(__name__)
__all__ = ["UpstreamAction", "check_of_from", "launch_for", "run_stamp_from"]
BREAKING = {"REMOVE", "MODIFY"}
ADD_PARTITION = """mutation upstreamAddIncident($repositorySelector: RepositorySelector!,
  $partitionsDefName: String!, $partitionKey: String!) {
  addDynamicPartition(repositorySelector: $repositorySelector,
    partitionsDefName: $partitionsDefName, partitionKey: $partitionKey) {
    __typename
    ... on AddDynamicPartitionSuccess { partitionKey }
    ... on PythonError { message }
    ... on UnauthorizedError { message } } }"""


@dataclass(frozen=True)
class Launch:
    """One run to start: the job, its incident partition (if any), why, and its tags."""

    job: str
    partition: str | None
    reason: str
    dataset: str
    tags: dict[str, str] = field(default_factory=dict)


FAILED = {"FAILURE", "ERROR"}  # what the polling sensor also treats as a failing run


def _outcome(params: dict[str, Any]) -> str:
    """An assertion run's outcome in an Entity Change Event. DataHub OSS puts the run's status
    in ``runResult`` (``COMPLETE``) and the outcome in ``assertionResult``
    (AssertionRunEventChangeEventGenerator); DataHub Cloud's documentation puts the outcome in
    ``runResult``. Either is read."""
    return str(params.get("assertionResult") or params.get("runResult") or "")


def _failure_from_ece(event: dict[str, Any]) -> AssertionRun | None:
    if event.get("entityType") != "assertion" or event.get("category") != "RUN":
        return None
    params = event.get("parameters") or {}
    if event.get("operation") != "COMPLETED" or _outcome(params) not in FAILED:
        return None
    stamp = int((event.get("auditStamp") or {}).get("time") or 0)
    return AssertionRun(
        str(event["entityUrn"]),
        str(params.get("asserteeUrn", "")),
        stamp,
        _outcome(params),
        str(params.get("runId", "")),
    )


def _failure_from_mcl(event: dict[str, Any]) -> AssertionRun | None:
    if event.get("entityType") != "assertion" or event.get("aspectName") != "assertionRunEvent":
        return None
    aspect = event.get("aspect") or {}
    value = aspect.get("value")
    run = json.loads(value) if isinstance(value, str) else (value or {})
    if (run.get("result") or {}).get("type") not in FAILED:
        return None
    return AssertionRun(
        str(event.get("entityUrn") or run.get("assertionUrn")),
        str(run.get("asserteeUrn", "")),
        int(run.get("timestampMillis") or 0),
        str((run.get("result") or {}).get("type")),
        str(run.get("runId", "")),
    )


def launch_for(
    event_type: str,
    event: dict[str, Any],
    refresh_job: str | None,
    run_stamp: RunStamp | None = None,
    check_of: CheckName | None = None,
) -> Launch | None:
    """What one DataHub event asks Upstream to run; None for everything else.

    An incident is keyed by its run event's own time, as the polling sensor keys it. An Entity
    Change Event carries only the time DataHub saw the change, so ``run_stamp`` reads the run's
    own time from DataHub; without one (or when DataHub does not answer) the change's time is
    used, and the sensor may open the same failure once more under its own key."""
    run = None
    if event_type == "EntityChangeEvent_v1":
        run = _failure_from_ece(event)
        stamp = run_stamp(run.assertion_urn, run.run_id) if run and run_stamp else None
        if run is not None and stamp:
            run = replace(run, timestamp_ms=stamp)
        breaking = (
            event.get("category") == "TECHNICAL_SCHEMA"
            and event.get("entityType") == "dataset"
            and event.get("operation") in BREAKING
        )
        if run is None and breaking:
            if refresh_job is None:
                return None
            field_path = (event.get("parameters") or {}).get("fieldPath", "")
            return Launch(
                refresh_job,
                None,
                f"schema {event['operation']} of {field_path or 'a field'}",
                str(event["entityUrn"]),
                {"upstream/schema-change": str(event["operation"])},
            )
    elif event_type == "MetadataChangeLogEvent_v1":
        run = _failure_from_mcl(event)
    if run is None:
        return None
    if not run.asserted_urn or not run.timestamp_ms:
        log.warning("assertion failure without assertee or time ignored: %s", run)
        return None
    return Launch(
        "reliability",
        incident_key(run, check_of(run.assertion_urn) if check_of else ""),
        f"assertion {run.assertion_urn} failed",
        run.asserted_urn,
        {"upstream/assertion": run.assertion_urn},
    )


class DagsterLauncher:
    """Launches runs on a Dagster webserver through its GraphQL API."""

    def __init__(
        self,
        url: str,
        location: str = "upstream",
        repository: str = "__repository__",
        partitions_def: str = "incidents",
        timeout: int = 30,
    ) -> None:
        from urllib.parse import urlsplit

        from dagster_graphql import DagsterGraphQLClient

        parts = urlsplit(url)
        self.url = url.rstrip("/")
        self.location, self.repository, self.partitions_def = location, repository, partitions_def
        self.timeout = timeout
        self.client = DagsterGraphQLClient(
            parts.hostname or "localhost",
            port_number=parts.port,
            use_https=parts.scheme == "https",
            timeout=timeout,
            path_prefix=parts.path.rstrip("/"),
        )

    def add_partition(self, key: str) -> bool:
        """True when the partition is new; False when the sensor or an earlier event has it."""
        import requests

        response = requests.post(
            f"{self.url}/graphql",
            json={
                "query": ADD_PARTITION,
                "variables": {
                    "repositorySelector": {
                        "repositoryLocationName": self.location,
                        "repositoryName": self.repository,
                    },
                    "partitionsDefName": self.partitions_def,
                    "partitionKey": key,
                },
            },
            timeout=self.timeout,
        )
        response.raise_for_status()
        result = response.json()["data"]["addDynamicPartition"]
        kind = result["__typename"]
        if kind == "DuplicateDynamicPartitionError":
            return False
        if kind != "AddDynamicPartitionSuccess":
            raise UpstreamError(
                f"Dagster refused incident partition {key}: {result.get('message', kind)}",
                f"check that code location {self.location!r} at {self.url} has the "
                f"{self.partitions_def!r} partitions and that the action may write to it",
            )
        return True

    def launch(self, launch: Launch) -> str | None:
        """The run ID, or None when this incident already has its partition (and its run)."""
        tags = {"upstream/trigger": "datahub-action", "upstream/dataset": launch.dataset}
        tags.update(launch.tags)
        if launch.partition is not None:
            if not self.add_partition(launch.partition):
                return None
            tags["dagster/partition"] = launch.partition
        run_id: str = self.client.submit_job_execution(
            launch.job,
            repository_location_name=self.location,
            repository_name=self.repository,
            tags=tags,
        )
        return run_id


def _action_base() -> type:
    import sys

    if "datahub" not in sys.modules:  # first SDK import: keep HOME clean and telemetry off
        _sdk.prepare()
    try:
        from datahub_actions.action.action import Action  # type: ignore[import-untyped]
    except ImportError:  # the Actions framework is an optional production dependency
        return object
    base: type = Action
    return base


class UpstreamAction(_action_base()):  # type: ignore[misc]
    """The Actions framework entry point (``type: upstream_dagster.datahub.action:UpstreamAction``).

    Config: ``dagster_url`` (required), ``location`` (default ``upstream``), ``repository``,
    ``refresh_job`` (``estate_refresh``; null to ignore schema changes), ``quiet_minutes``
    (default 10: one investigation per dataset in that time, as the sensor opens one per
    failing dataset per poll).
    """

    def __init__(
        self,
        config: dict[str, Any],
        launcher: Any = None,
        run_stamp: RunStamp | None = None,
        check_of: CheckName | None = None,
    ) -> None:
        if not config.get("dagster_url") and launcher is None:
            raise UpstreamError(
                "the Upstream action has no dagster_url",
                "set action.config.dagster_url to the Dagster webserver, e.g. "
                "http://dagster-webserver:3000",
            )
        self.refresh_job = config.get("refresh_job", "estate_refresh")
        self.quiet_ms = int(float(config.get("quiet_minutes", 10)) * 60_000)
        self.launcher = launcher or DagsterLauncher(
            str(config["dagster_url"]),
            location=str(config.get("location", "upstream")),
            repository=str(config.get("repository", "__repository__")),
        )
        self.run_stamp = run_stamp
        self.check_of = check_of
        self.recent: dict[tuple[str, str], int] = {}  # (job, dataset) -> last launch, ms
        self.launched: list[str] = []

    @classmethod
    def create(cls, config_dict: dict[str, Any], ctx: Any) -> UpstreamAction:
        graph = getattr(getattr(ctx, "graph", None), "graph", None)  # the framework's DataHub
        if graph is None:
            return cls(config_dict or {})
        return cls(
            config_dict or {},
            run_stamp=run_stamp_from(graph.execute_graphql),
            check_of=check_of_graph(graph),
        )

    def act(self, event: Any) -> None:
        """``event`` is the framework's EventEnvelope (``event_type`` and ``event``)."""
        payload = json.loads(event.event.as_json())
        launch = launch_for(
            str(event.event_type), payload, self.refresh_job, self.run_stamp, self.check_of
        )
        if launch is None:
            return
        now = int(time.time() * 1000)
        last = self.recent.get((launch.job, launch.dataset))
        if last is not None and now - last < self.quiet_ms:
            log.info("%s on %s: already launched %d s ago", launch.reason, launch.dataset,
                     (now - last) // 1000)  # fmt: skip
            return
        run_id = self.launcher.launch(launch)
        self.recent[(launch.job, launch.dataset)] = now
        if run_id is None:
            log.info("%s: incident %s is already known to Dagster", launch.reason, launch.partition)
            return
        self.launched.append(run_id)
        log.info("%s: launched %s run %s", launch.reason, launch.job, run_id)

    def close(self) -> None:
        pass
