"""The incident write-back: the gate re-checked at execution, the fix applied, the rebuild, the
re-check, and what DataHub learns. Called by the `incident_writeback` asset."""

from __future__ import annotations

from typing import Any

import dagster as dg

from upstream_dagster import clock, gate
from upstream_dagster.defs.coverage import AUTO_REVIEWER
from upstream_dagster.errors import UpstreamError
from upstream_dagster.reliability.verdict import Verdict
from upstream_dagster.settings import Settings
from upstream_dagster.spec.models import EstateSpec


class IncidentRefused(UpstreamError):
    pass


def _refuse_unless(ok: bool, problem: str, fix: str) -> None:
    if not ok:
        raise IncidentRefused(problem, fix)


def _check_passes(settings: Settings, v: Verdict) -> tuple[bool, str]:
    from upstream_dagster.datahub import open_graph

    graph = open_graph(settings)
    try:
        runs = [
            r
            for r in graph.assertion_runs(None, v.window.symptom_ms, latest_only=True)
            if r.assertion_urn == v.check.assertion
        ]
    finally:
        graph.close()
    if not runs:
        return False, "the failing check has not run since the fix"
    latest = runs[-1]
    return (
        latest.result == "SUCCESS",
        f"{v.check.description or v.check.assertion}: {latest.result}",
    )


def _blast_radius(graph: Any, v: Verdict) -> tuple[str, ...]:
    """Dashboards and charts downstream of the cause (a warm run did not read lineage)."""
    from upstream_dagster.datahub.probe import GraphProbe

    if v.cause is None:
        return ()
    return GraphProbe(graph, v.window, budget=10).consumers(v.cause)


def write_back(
    context: dg.AssetExecutionContext, settings: Settings, spec: EstateSpec, config: Any, v: Verdict
) -> dg.MaterializeResult:
    from upstream_dagster.cli import run_job
    from upstream_dagster.datahub import open_graph, scribe
    from upstream_dagster.demo.deploy import prepare_manifest
    from upstream_dagster.sandbox import apply_patch

    policy = spec.policies
    _refuse_unless(
        config.verdict_digest == v.digest,
        f"digest {config.verdict_digest} is not the verdict's ({v.digest})",
        "copy the digest from the latest incident_verdict materialization of this partition",
    )
    automatic = config.reviewer == AUTO_REVIEWER
    _refuse_unless(
        not automatic or policy.actuation == "auto",
        f"an automatic launch, but estate.yaml's policy is {policy.actuation!r}",
        "a person on the approvers list approves it",
    )
    _refuse_unless(
        automatic or config.reviewer in policy.approvers,
        f"{config.reviewer!r} is not an approver in estate.yaml",
        f"approvers are: {', '.join(policy.approvers) or 'nobody'}",
    )
    _refuse_unless(
        v.concluded,
        f"the investigation abstained: {v.headline()}",
        "settle the named probe and re-run the reliability job; nothing is applied on a guess",
    )
    if policy.actuation == "dry-run":
        return dg.MaterializeResult(metadata={"result": "policy is dry-run: nothing applied"})
    _refuse_unless(
        not automatic or v.risk.score <= policy.max_auto_risk,
        f"risk {v.risk.score:.2f} is above max_auto_risk {policy.max_auto_risk}: "
        "an automatic launch may not apply it",
        "a person on the approvers list approves it: " + v.risk.explain(),
    )
    gate.claim(settings.state_dir, f"incident-{v.digest}", context.run.run_id, config.reviewer)
    started = clock.observed_ms()
    applied = "nothing to apply"
    if v.remedy.action == "patch":
        problem = apply_patch(settings.dbt_project_dir, v.remedy.diff)
        if problem:
            raise IncidentRefused(
                f"the patch no longer applies to the deployed project: {problem}",
                "re-run the reliability job for this incident to construct a current patch",
            )
        prepare_manifest(settings)
        applied = f"patched {', '.join(v.remedy.files)} in {settings.dbt_project_dir}"
    rebuilt = v.remedy.action in ("patch", "rerun", "reload")
    if rebuilt:
        run_job(settings, "estate_refresh", tags={"upstream/incident": v.key})
    passed, message = _check_passes(settings, v)
    graph = open_graph(settings)
    try:
        closed = scribe.close_incident(graph, v, passed, message)
        receipts = [closed]
        if passed:
            minutes = (clock.observed_ms() - v.window.symptom_ms) / 60000
            # cite the incident by the URN DataHub holds it under (a GMS names it itself)
            receipts += scribe.runbook(graph, v, closed.urn if closed.written else None)
            receipts += scribe.remember(graph, v, minutes)
            # the datasets between cause and symptom, the symptom, and the dashboards beyond
            path = v.ranked[0][0].path[1:] if v.ranked else ()
            impacted = (*path, *(v.consumers or _blast_radius(graph, v)))
            receipts += scribe.tag_blast_radius(graph, v, impacted)
            if policy.reliability.immunize_on_resolve:
                receipts += scribe.guard_assertions(graph, v)
    finally:
        graph.close()
    context.log.info(f"owners notified: {', '.join(v.owners) or 'no owner in DataHub'}")
    return dg.MaterializeResult(
        metadata={
            "resolved": passed,
            "check_after_fix": message,
            "applied": applied,
            "rebuilt": rebuilt,
            "reviewer": config.reviewer,
            "writes": len([r for r in receipts if r.written]),
            "failed_writes": len([r for r in receipts if not r.written]),
            "receipts": dg.MetadataValue.md(
                "\n".join(f"- {r.aspect} on {r.urn}: {r.detail}" for r in receipts)
            ),
            "seconds": round((clock.observed_ms() - started) / 1000, 1),
        }
    )
