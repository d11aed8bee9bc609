"""Running Upstream's jobs in this process, as the command line, the evaluation and the tests
do: the Dagster instance in the state folder, one job at a time (never one job inside another's
step), and the results read back as typed records.
"""

from __future__ import annotations

import contextlib
import getpass
import io
import os
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import dagster as dg

from upstream_dagster.conformance.plan import Plan
from upstream_dagster.conformance.score import Dial
from upstream_dagster.definitions import CORE_JOBS, build, core
from upstream_dagster.defs import journal, launch, progress
from upstream_dagster.defs.estate_jobs import (
    ESTATE_JOBS,
    REBUILD_TAG,
    REFRESH_JOB,
    SOURCE_TESTS_TAG,
)
from upstream_dagster.defs.estate_jobs import OUTCOME as BUILD_OUTCOME
from upstream_dagster.defs.instance import EPHEMERAL_ENV as EPHEMERAL_ENV
from upstream_dagster.defs.instance import dagster_instance as dagster_instance
from upstream_dagster.defs.instance import gate_store as gate_store
from upstream_dagster.defs.instance import run_instance
from upstream_dagster.defs.resources import ReviewerToken
from upstream_dagster.errors import DataHubUnavailable, UpstreamError
from upstream_dagster.settings import Settings
from upstream_dagster.state import approvals, claims

if TYPE_CHECKING:
    from upstream_dagster.reliability.verdict import Verdict


def failure_message(result: dg.ExecuteInProcessResult) -> str:
    """dbt's own error when the build failed (a monitor that failed over the tables the build
    left behind is a consequence, not the cause); else the first failed check's reason, else
    the first step failure's own message."""
    failures = [_step_error(e) for e in result.all_events if e.is_step_failure]
    built = [f for f in failures if f and f.startswith(f"step {BUILD_OUTCOME} ")]
    if built:
        return built[0]
    for check in result.get_asset_check_evaluations():
        if not check.passed and check.description:
            return f"check {check.check_name} failed: {check.description}"
    for found in failures:
        if found:
            return found
    return "the run failed; open the Dagster UI (`make ui`) to read its log"


def _step_error(event: dg.DagsterEvent) -> str:
    error = event.step_failure_data.error if event.step_failure_data else None
    while (
        error is not None
        and error.cause is not None
        and (
            "Error occurred while executing" in error.message
            or error.cls_name in ("DagsterExecutionStepExecutionError",)
        )
    ):
        error = error.cause
    if error is None:
        return ""
    text = error.message.strip()
    head, colon, rest = text.partition(": ")  # "upstream_dagster.errors.BuildFailed: ..."
    if colon and head.split(".")[-1] == error.cls_name:
        text = rest
    return f"step {event.step_key} failed: {text}"


HOST_TAG, PID_TAG = "upstream/host", "upstream/pid"
CLI_USER_TAG = "upstream/cli-user"  # the account that ran the command (not a verified identity)


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container): say so, do not fail
        return f"uid {os.getuid()}"


def release_dead_runs(instance: dg.DagsterInstance) -> list[str]:
    """Runs this host started in a process that is gone (a command killed with kill -9, say)
    are marked failed, so none stays STARTED forever, and give back their pool slots, so a dead
    write-back never holds the one write-back slot. Returns the runs released."""
    released: list[str] = []
    here = socket.gethostname()
    for record in instance.get_run_records(
        dg.RunsFilter(
            statuses=[dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.STARTING],
            tags={HOST_TAG: here},
        ),  # fmt: skip
        limit=200,
    ):
        run = record.dagster_run
        if not claims.alive(here, int(run.tags.get(PID_TAG, "0") or 0)):
            instance.report_run_failed(run, "its process died (killed?); Upstream marked it failed")
            released.append(run.run_id)
    storage = instance.event_log_storage
    if not storage.supports_global_concurrency_limits:
        return released
    for run_id in storage.get_concurrency_run_ids():
        held = instance.get_run_by_id(run_id)
        if held is None or held.is_finished:
            storage.free_concurrency_slots_for_run(run_id)
            released.append(run_id)
    return sorted(set(released))


def failed_steps(result: dg.ExecuteInProcessResult) -> set[str]:
    return {e.step_key for e in result.all_events if e.is_step_failure and e.step_key}


def run_job(
    settings: Settings,
    job_name: str,
    run_config: dict[str, Any] | None = None,
    tags: dict[str, str] | None = None,
    selection: list[dg.AssetKey] | None = None,
    partition: str | None = None,
    loud_build_ok: bool = False,
    resources: dict[str, object] | None = None,
    targeted: bool = True,
) -> dg.ExecuteInProcessResult:
    """One job, in this process, on the state folder's instance; a failed run raises
    `UpstreamError` naming what failed. With ``loud_build_ok``, a run whose only failure is the
    build's outcome (dbt could not build a model, and DataHub was told) is returned. A refresh
    rebuilds only what changed unless ``targeted`` is False (all of ``selection``). A job that
    reads an embedded DataHub Lite that is not there is refused before anything is made."""
    if (
        job_name not in ESTATE_JOBS
        and settings.backend == "lite"
        and not settings.lite_file.exists()
    ):
        raise DataHubUnavailable.no_lite_file(settings.lite_file)  # only a build makes it
    instance = run_instance(settings)
    defs = core(settings) if job_name in CORE_JOBS else build(settings)
    job = defs.resolve_job_def(job_name)
    release_dead_runs(instance)
    tags = {
        launch.LAUNCHED_BY: "cli",
        CLI_USER_TAG: _user(),
        **(tags or {}),
        HOST_TAG: socket.gethostname(),
        PID_TAG: str(os.getpid()),
    }
    rebuild = None
    if job_name in ESTATE_JOBS:  # dagster-dbt is imported only for the jobs that build
        from upstream_dagster.defs import rebuild as rebuilds

        # A refresh rebuilds what changed since the last build and what is downstream of it.
        refresh = job_name == REFRESH_JOB and targeted
        rebuild = rebuilds.plan(settings, job, selection) if refresh else None
        if rebuild is not None:
            job, selection, tags[REBUILD_TAG] = rebuilds.subset(job, rebuild), None, rebuild.select
            if rebuild.source_tests:
                tags[SOURCE_TESTS_TAG] = " ".join(rebuild.source_tests)
    # The command line shows warnings only; the full log is in the Dagster UI for every run.
    # A loud build failure the caller expects is reported by the caller, not as a traceback.
    level = "CRITICAL" if loud_build_ok else "WARNING"
    # ``progress`` passes each step's start to the command line's spinner (defs/progress.py).
    # A failed step is told once, by the UpstreamError below, not also as Dagster's stack trace.
    console = {"log_level": level, "failures": False}
    loggers = {"console": {"config": console}, "progress": {}}
    config = {"loggers": loggers, **(run_config or {})}
    # dagster-dbt echoes every dbt log line to stdout; a command prints its own summary, and
    # the full log stays in the run's event log (the Dagster UI).
    with contextlib.redirect_stdout(io.StringIO()):
        result = job.execute_in_process(
            instance=instance,
            raise_on_error=False,
            run_config=config,
            tags=tags,
            asset_selection=selection,
            partition_key=partition,
            resources=resources,
        )
    if job_name in ESTATE_JOBS:
        rebuilds.record(settings, result, rebuild)
    if not result.success and not (loud_build_ok and failed_steps(result) == {BUILD_OUTCOME}):
        raise UpstreamError(
            f"the Dagster job {job_name} failed ({failure_message(result)})",
            "read the message above; the run's full log is in the Dagster UI "
            f"(`make ui`), run id {result.run_id}",
        )
    return result


def metadata(result: dg.ExecuteInProcessResult, node: str) -> dict[str, Any]:
    """A node's materialization metadata in a run, as plain values."""
    found = result.asset_materializations_for_node(node)
    return {k: v.value for k, v in found[0].metadata.items()} if found else {}


@dataclass(frozen=True)
class Scored:
    run_id: str
    dial: Dial
    batch: Plan
    nonce: str = ""  # the batch's one-time value: an approval names it
    policy: str = ""  # the policy it was planned under, and whether it is in force


def score(settings: Settings) -> Scored:
    """The score job: the dial and the batch it planned."""
    result = run_job(settings, "score")
    meta = metadata(result, "proposals")
    return Scored(
        result.run_id,
        result.output_for_node("conformance"),
        result.output_for_node("proposals"),
        str(meta.get("approval_nonce", "")),
        str(meta.get("policy", "")),
    )


@dataclass(frozen=True)
class Investigated:
    run_id: str
    verdict: Verdict
    incident: str  # the incident's URN in DataHub


def investigate(settings: Settings, key: str) -> Investigated:
    """The reliability job for one incident partition (added if new)."""
    dagster_instance(settings).add_dynamic_partitions("incidents", [key])
    result = run_job(settings, "reliability", partition=key)
    meta = metadata(result, "incident_verdict")
    return Investigated(
        result.run_id, result.output_for_node("incident_verdict"), str(meta["incident"])
    )


@dataclass(frozen=True)
class IncidentFixed:
    applied: str  # what changed in the deployed project
    rebuilt: bool
    resolved: bool
    check_after_fix: str
    writes: int
    result: str = ""  # set when the policy applied nothing (dry-run)
    runs: tuple[str, ...] = ()  # the fix's, the rebuild's and the resolution's run ids


def waiting_nonce(settings: Settings, kind: str, digest: str) -> str:
    """The one-time value waiting for ``kind`` ``digest`` ("" when none is: the gate says why)."""
    held = approvals.outstanding(gate_store(settings), kind, digest)
    return held.nonce if held else ""


def _carrying(token: str) -> dict[str, object] | None:
    """The reviewer's own DataHub token, as a resource of the one run that writes (never run
    config): the run asks the deployment's DataHub whose it is."""
    return {"reviewer_token": ReviewerToken(token)} if token else None


def approve_incident(
    settings: Settings,
    key: str,
    digest: str,
    reviewer: str,
    proof: str = "",
    nonce: str = "",
    token: str = "",
) -> IncidentFixed:
    """An incident's fix, approved: the fix, the rebuild, the resolution, each a run of its own
    (the sensors that chain them in the UI leave a chain tagged as driven from here alone)."""
    # the remediation area (and the reliability area it builds on) loads with the jobs it runs
    from upstream_dagster.defs.remediation import DRIVER_TAG, INCIDENT_TAG

    tags = {DRIVER_TAG: "cli"}
    nonce = nonce or waiting_nonce(settings, "fix", digest)
    approval = {"verdict_digest": digest, "reviewer": reviewer, "proof": proof, "nonce": nonce}
    config = {"ops": {"incident_fix": {"config": approval}}}
    progress.phase(
        "1/3 applying the approved fix to the deployed dbt project (incident_writeback_job)"
    )
    applied = run_job(
        settings, "incident_writeback_job", config, tags=tags, partition=key,
        resources=_carrying(token),
    )  # fmt: skip
    fix = metadata(applied, "incident_fix")
    if fix.get("refused"):
        raise UpstreamError(str(fix["result"]), str(fix["fix"]))
    if "result" in fix:
        return IncidentFixed("nothing", False, False, "", 0, str(fix["result"]), (applied.run_id,))
    ran = [applied.run_id]
    if fix["rebuild"]:
        progress.phase("2/3 rebuilding the estate with the fix (estate_refresh)")
        ran.append(run_job(settings, "estate_refresh", tags={**tags, INCIDENT_TAG: key}).run_id)
    progress.phase("3/3 reading the failing check again (incident_resolution_job)")
    resolution = run_job(settings, "incident_resolution_job", tags=tags, partition=key)
    done = metadata(resolution, "incident_resolution")
    return IncidentFixed(
        str(fix["applied"]),
        bool(fix["rebuild"]),
        bool(done["resolved"]),
        str(done["check_after_fix"]),
        int(done["writes"]),
        runs=(*ran, resolution.run_id),
    )


@dataclass(frozen=True)
class BatchWritten:
    digest: str
    policy: str
    written: int
    failed: int
    projected_percent: float
    result: str = ""  # set when the policy wrote nothing (dry-run), and why


def approve_batch(
    settings: Settings,
    digest: str,
    approve: list[str],
    reviewer: str,
    reject: list[str] | None = None,
    reason: str = "",
    proof: str = "",
    nonce: str = "",
    token: str = "",
) -> BatchWritten:
    """The coverage write-back job for one batch, as a reviewer approved it."""
    nonce = nonce or waiting_nonce(settings, "batch", digest)
    config = {
        "batch_digest": digest,
        "approve": approve,
        "reviewer": reviewer,
        "reject": list(reject or []),
        "reject_reason": reason,
        "nonce": nonce,
        "proof": proof,
    }
    run_config = {"ops": {"coverage_writeback": {"config": config}}}
    result = run_job(settings, "coverage_writeback_job", run_config, resources=_carrying(token))
    meta = metadata(result, "coverage_writeback")
    if meta.get("refused"):
        raise UpstreamError(str(meta["result"]), str(meta["fix"]))
    if "result" in meta:
        return BatchWritten(digest, str(meta["policy"]), 0, 0, 0.0, str(meta["result"]))
    return BatchWritten(
        digest,
        str(meta["policy"]),
        int(meta["written"]),
        int(meta["failed"]),
        float(meta["projected_percent"]),
    )


@dataclass(frozen=True)
class Verified:
    measured: float
    projected: float

    @property
    def equal(self) -> bool:
        return self.measured == self.projected


def verify(settings: Settings) -> Verified:
    """The verify job, after the answers that need no run (`journal.nothing_to_verify`)."""
    instance = dagster_instance(settings)
    release_dead_runs(instance)  # a killed write-back's run is marked failed first
    answer = journal.nothing_to_verify(instance, gate_store(settings))
    if answer is not None:
        raise answer
    result = run_job(settings, "coverage_verify_job")
    (check,) = result.get_asset_check_evaluations()
    meta = {k: v.value for k, v in check.metadata.items()}
    return Verified(float(str(meta["measured"])), float(str(meta["projected"])))


@dataclass(frozen=True)
class Reset:
    restored: int
    batches: str


def reset(settings: Settings, batch: str = "all") -> Reset:
    """Undo: every aspect the write-backs wrote back to its pre-image."""
    config = {"ops": {"coverage_reset": {"config": {"batch_digest": batch, "confirm": True}}}}
    meta = metadata(run_job(settings, "coverage_reset_job", config), "coverage_reset")
    return Reset(int(meta["aspects_restored"]), str(meta["batches"]))
