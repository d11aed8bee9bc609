"""The reliability controller in Dagster: one dynamic partition per incident.

failing assertion in DataHub -> `failing_assertions` sensor -> the `reliability` job (a build
of the estate that failed -> `failed_builds` sensor -> the same job, for each model dbt could
not build):
incident_triage -> incident_evidence -> incident_simulation -> incident_verdict (raises the
incident in DataHub, with the RCA). The fix waits for a person (`defs.remediation`).
"""

from collections.abc import Iterator

import dagster as dg

from upstream_dagster.datahub import scribe
from upstream_dagster.datahub.incidents import (
    failed_build_runs,
    failing_runs,
    named,
    same_event,
)
from upstream_dagster.datahub.model import AssertionRun
from upstream_dagster.datahub.signals import is_build_check
from upstream_dagster.defs.estate_jobs import estate_build_job, estate_refresh_job
from upstream_dagster.defs.incident_view import approve_markdown, link_to_failing_check
from upstream_dagster.defs.launch import HANDOFF_SECONDS, by_sensor
from upstream_dagster.defs.presentation import verdict_metadata
from upstream_dagster.defs.resources import (
    WAREHOUSE_POOL,
    DataHubResource,
    UpstreamResource,
    WarehouseResource,
)
from upstream_dagster.narrator import Narrator
from upstream_dagster.reliability.remediation import Remedy
from upstream_dagster.reliability.verdict import Sim, Verdict
from upstream_dagster.services import approval, investigation
from upstream_dagster.services.incident_record import make_record
from upstream_dagster.state import records

GROUP = "reliability"
CHECK_TAG = "upstream/check"  # the failing check's name, beside its incident partition
incidents = dg.DynamicPartitionsDefinition(name="incidents")


@dg.asset(
    kinds={"datahub"},
    partitions_def=incidents,
    group_name=GROUP,
    deps=[dg.AssetKey("datahub")],  # it reads the graph the build writes: one flow
    description="Reads the failing assertion, the symptom's owners and criticality, and "
    "recalls memory first: the root cause an earlier incident wrote on the symptom.",
)
def incident_triage(
    context: dg.AssetExecutionContext, datahub: DataHubResource, upstream: UpstreamResource
) -> dg.Output[investigation.Triage]:
    with datahub.graph() as graph:
        t = investigation.triage(graph, upstream.spec(), context.partition_key)
    return dg.Output(
        t,
        metadata={
            "symptom": t.trigger.symptom,
            "failing_check": t.trigger.check.description or t.trigger.check.assertion,
            "column": t.trigger.check.column or "none: the check is on the whole dataset",
            "memory": (f"{t.memory.failure_class} of {t.memory.cause}" if t.memory else "none"),
            "owners_notified": ", ".join(t.owners) or "no owner in DataHub",
            "datahub_reads": t.reads,
        },
    )


@dg.asset(
    kinds={"datahub", "duckdb"},
    partitions_def=incidents,
    group_name=GROUP,
    pool=WAREHOUSE_POOL,  # forensic SQL reads the warehouse: it waits for a build
    description="Walks lineage upstream one hop at a time, as it stood before the symptom; "
    "checks each node's assertions, schema timeline, profiles and run records; runs guarded "
    "forensic SQL; states hypotheses that cite the evidence ledger.",
)
def incident_evidence(
    incident_triage: investigation.Triage,
    datahub: DataHubResource,
    warehouse: WarehouseResource,
    upstream: UpstreamResource,
) -> dg.Output[investigation.Gathered]:
    with datahub.graph() as graph:
        g = investigation.gather(graph, warehouse.get(), upstream.spec(), incident_triage)
    inv = g.investigation
    ledger = "\n".join(f"- E{e.index} ({e.kind}) {e.claim}" for e in inv.ledger.items)
    return dg.Output(
        g,
        metadata={
            "nodes_walked": inv.walked,
            "unhealthy": dg.MetadataValue.json(sorted(inv.unhealthy)),
            "hypotheses": len(inv.ranked),
            "datahub_reads": g.reads,
            "forensic_queries": inv.forensic_queries,
            "evidence_ledger": dg.MetadataValue.md(ledger or "no evidence"),
        },
    )


@dg.asset(
    kinds={"dbt", "duckdb"},
    partitions_def=incidents,
    group_name=GROUP,
    pool=WAREHOUSE_POOL,  # the sandbox copies the warehouse: never half-way through a build
    description="Verifies the leading hypothesis's fix before it is believed: copies the "
    "dbt project and warehouse to a sandbox, re-runs the failing check there without the fix "
    "(the control), then applies the patch, rebuilds the affected models and re-runs it again; "
    "verified only when green with the fix and red without it.",
)
def incident_simulation(
    incident_triage: investigation.Triage,
    incident_evidence: investigation.Gathered,
    datahub: DataHubResource,
    upstream: UpstreamResource,
) -> dg.Output[tuple[Remedy, Sim]]:
    with datahub.graph() as graph:
        fix, sim = investigation.simulate_step(
            graph, upstream.dbt_project(), upstream.spec(), incident_triage, incident_evidence
        )
    return dg.Output(
        (fix, sim),
        metadata={
            "remedy": fix.action,
            "simulated": sim.ran,
            "check_passes_after_fix": sim.passed,
            "result": sim.message,
            "control": sim.control_message or "not run",
            "verified": sim.verified,
            "patch": dg.MetadataValue.md(f"```diff\n{fix.diff}```" if fix.diff else "no patch"),
        },
    )


@dg.asset(
    kinds={"datahub", "python"},
    partitions_def=incidents,
    group_name=GROUP,
    description="The critic: confidence from cited evidence, memory, timeline, forensics "
    "and simulation; abstains below min_confidence_to_remediate and names the probe that "
    "would settle it. Raises the incident in DataHub with the RCA as its description.",
)
def incident_verdict(
    context: dg.AssetExecutionContext,
    incident_triage: investigation.Triage,
    incident_evidence: investigation.Gathered,
    incident_simulation: tuple[Remedy, Sim],
    datahub: DataHubResource,
    upstream: UpstreamResource,
) -> dg.Output[Verdict]:
    fix, sim = incident_simulation
    spec = upstream.spec()
    narrator = Narrator(
        spec.policies.reliability.budgets.model_calls,
        seconds=spec.policies.reliability.budgets.model_seconds,
    )
    t, g = incident_triage, incident_evidence
    v = investigation.verdict_step(spec, t, g, fix, sim, narrator)
    context.log.info(f"{v.headline()}; notified: {', '.join(v.owners) or 'no owner'}")
    with datahub.graph() as graph:
        reads = {"triage": list(t.record), "walk": list(g.record)}
        record = make_record(v.key, graph.capabilities, reads, list(g.forensic), fix, sim, v)
        path = records.record_path(upstream.state, v.key)
        records.write(path, record)
        receipt = scribe.raise_incident(graph, v).receipt
    issued = approval.issue(upstream.gate, spec.policies, "fix", v.digest, upstream.pin)
    link_to_failing_check(context, t, v, receipt.urn)
    return dg.Output(
        v,
        metadata={
            **verdict_metadata(v, approve_markdown(v, issued.nonce, spec.policies)),
            # on a GMS the server names the incident; the receipt carries its URN
            "incident": receipt.urn,
            "incident_written": receipt.written,
            # the file is named by the whole key: its folder is said, never a long path
            "record": f"{path.parent.name}/ in the state folder, named by the incident key",
            "approval_nonce": issued.nonce,
            "policy": issued.trust.describe(),
        },
    )


reliability_job = dg.define_asset_job(
    "reliability",
    selection=dg.AssetSelection.assets(
        incident_triage, incident_evidence, incident_simulation, incident_verdict
    ),
    description="Investigate one incident (a partition): triage, evidence, simulation, "
    "verdict. The failing_assertions sensor launches it; so does `upstream investigate`.",
)


@dg.sensor(
    job=reliability_job,
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Polls DataHub for failing assertion run events newer than its cursor. "
    "Each failing dataset becomes one incident: a dynamic partition keyed by the assertion "
    "and its event time, and one run of the reliability job.",
)
def failing_assertions(
    context: dg.SensorEvaluationContext, datahub: DataHubResource
) -> dg.SensorResult:
    cursor = int(context.cursor) if context.cursor else None
    with datahub.graph() as graph:
        runs = failing_runs(graph, cursor)
        first: dict[str, AssertionRun] = {}
        # A failed build is the failed_builds sensor's: it opens that incident when it fails.
        for run in (r for r in runs if not is_build_check(r.assertion_urn)):
            first.setdefault(run.asserted_urn, run)
        checks = named(graph, list(first.values()))
    # the same event under an older form of its key is the same incident
    known = {same_event(k) for k in context.instance.get_dynamic_partitions("incidents")}
    new = [k for k in checks if same_event(k) not in known]
    newest = max([r.timestamp_ms for r in runs], default=cursor or 0)
    return dg.SensorResult(
        run_requests=[
            dg.RunRequest(
                run_key=k,
                partition_key=k,
                tags={
                    CHECK_TAG: checks[k],
                    **by_sensor("failing_assertions", f"{checks[k]} failed"),
                },
            )
            for k in new
        ],
        dynamic_partitions_requests=[incidents.build_add_request(new)] if new else [],
        cursor=str(newest) if newest else context.cursor,
    )


@dg.run_failure_sensor(
    monitored_jobs=[estate_build_job, estate_refresh_job],
    minimum_interval_seconds=HANDOFF_SECONDS,
    request_job=reliability_job,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="When a build of the estate fails, opens one incident per model dbt could not "
    "build (the failing build check the run reported into DataHub, with dbt's error) and "
    "launches the reliability job for it: the loud failure is investigated like a silent one.",
)
def failed_builds(
    context: dg.RunFailureSensorContext, datahub: DataHubResource
) -> Iterator[dg.RunRequest]:
    with datahub.graph() as graph:
        checks = named(graph, failed_build_runs(graph))
    known = {same_event(k) for k in context.instance.get_dynamic_partitions("incidents")}
    new = [k for k in checks if same_event(k) not in known]
    if not new:
        context.log.info(
            f"run {context.dagster_run.run_id} failed with no model failing to build in DataHub"
        )
        return
    context.instance.add_dynamic_partitions("incidents", new)
    for key in new:
        why = f"run {context.dagster_run.run_id} could not build {checks[key]}"
        tags = {CHECK_TAG: checks[key], **by_sensor("failed_builds", why)}
        yield dg.RunRequest(run_key=key, partition_key=key, tags=tags)


ASSETS = [incident_triage, incident_evidence, incident_simulation, incident_verdict]
defs = dg.Definitions(
    assets=ASSETS, jobs=[reliability_job], sensors=[failing_assertions, failed_builds]
)
