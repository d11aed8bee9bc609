"""The reliability controller in Dagster: one dynamic partition per incident.

failing assertion in DataHub -> `failing_assertions` sensor -> the `reliability` job:
incident_triage -> incident_evidence -> incident_simulation -> incident_verdict (raises the
incident in DataHub, with the RCA). The fix waits for a person: `incident_writeback`, launched
by hand with the verdict's digest, applies it to the deployed dbt project, rebuilds through the
estate_refresh job, resolves the incident only if the failing check then passes, and writes the
runbook, memory, tags and guard assertions.
"""

from typing import Any

import dagster as dg
from pydantic import Field

from upstream_dagster import gate
from upstream_dagster.defs import incident_ops as ops
from upstream_dagster.defs.resources import DataHubResource
from upstream_dagster.reliability.verdict import Verdict, pull_request_text, rca_markdown
from upstream_dagster.runtime import WRITEBACK_POOL, WRITEBACK_TAGS
from upstream_dagster.settings import Settings

GROUP = "reliability"
incidents = dg.DynamicPartitionsDefinition(name="incidents")


class IncidentApproval(dg.Config):
    verdict_digest: str = Field(description="The digest shown on the incident_verdict asset.")
    reviewer: str = Field(description="Who approves; must be listed in policies.approvers.")


def _spec(settings: Settings) -> Any:
    from upstream_dagster.spec import load_estate

    return load_estate(settings.estate_file)


def verdict_metadata(v: Verdict) -> dict[str, Any]:
    top = v.top
    return {
        "conclusion": v.headline(),
        "confidence": dg.MetadataValue.float(v.confidence),
        "concluded": v.concluded,
        "root_cause": v.cause or "none (abstained)",
        "column": v.column or ("none: the cause is a whole dataset" if v.cause else "none"),
        "failure_class": v.failure_class or "none (abstained)",
        "remedy": v.remedy.action,
        "verdict_digest": v.digest,
        "risk": dg.MetadataValue.float(v.risk.score),
        "datahub_reads": v.reads,
        "memory_used": v.memory_used,
        "hypotheses": len(v.ranked),
        "confidence_arithmetic": top[1].explain() if top else "no hypothesis cites evidence",
        "rca": dg.MetadataValue.md(rca_markdown(v)),
        "pull_request": dg.MetadataValue.md(pull_request_text(v) or "no patch to propose"),
        "narrator": (
            "wrote the RCA summary from the cited evidence"
            if v.summary
            else "off: the RCA summary is the template (no ANTHROPIC_API_KEY, or see notes)"
        ),
        "owners_notified": ", ".join(v.owners) or "no owner in DataHub",
        "blast_radius": ", ".join(v.consumers) or "no dashboard or chart downstream",
    }


def reliability_defs(settings: Settings) -> tuple[list[Any], Any]:
    @dg.asset(
        partitions_def=incidents,
        group_name=GROUP,
        description="Reads the failing assertion, the symptom's owners and criticality, and "
        "recalls memory first: the root cause an earlier incident wrote on the symptom.",
    )
    def incident_triage(context: dg.AssetExecutionContext) -> dg.Output[ops.Triage]:
        t = ops.triage(settings, _spec(settings), context.partition_key)
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
        partitions_def=incidents,
        group_name=GROUP,
        description="Walks lineage upstream one hop at a time, as it stood before the symptom; "
        "checks each node's assertions, schema timeline, profiles and run records; runs guarded "
        "forensic SQL; states hypotheses that cite the evidence ledger.",
    )
    def incident_evidence(
        context: dg.AssetExecutionContext, incident_triage: ops.Triage
    ) -> dg.Output[ops.Gathered]:
        g = ops.gather(settings, _spec(settings), incident_triage)
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
        partitions_def=incidents,
        group_name=GROUP,
        description="Verifies the leading hypothesis's fix before it is believed: copies the "
        "dbt project and warehouse to a sandbox, applies the patch, rebuilds the affected "
        "models and re-runs the failing check there.",
    )
    def incident_simulation(
        incident_triage: ops.Triage, incident_evidence: ops.Gathered
    ) -> dg.Output[tuple[Any, tuple[bool, bool, str]]]:
        fix, sim = ops.simulate_step(settings, _spec(settings), incident_triage, incident_evidence)
        return dg.Output(
            (fix, sim),
            metadata={
                "remedy": fix.action,
                "simulated": sim[0],
                "check_passes_after_fix": sim[1],
                "result": sim[2],
                "patch": dg.MetadataValue.md(f"```diff\n{fix.diff}```" if fix.diff else "no patch"),
            },
        )

    @dg.asset(
        partitions_def=incidents,
        group_name=GROUP,
        description="The critic: confidence from cited evidence, memory, timeline, forensics "
        "and simulation; abstains below min_confidence_to_remediate and names the probe that "
        "would settle it. Raises the incident in DataHub with the RCA as its description.",
    )
    def incident_verdict(
        context: dg.AssetExecutionContext,
        incident_triage: ops.Triage,
        incident_evidence: ops.Gathered,
        incident_simulation: tuple[Any, tuple[bool, bool, str]],
        datahub: DataHubResource,
    ) -> dg.Output[Verdict]:
        from upstream_dagster import records
        from upstream_dagster.datahub import open_graph
        from upstream_dagster.datahub.scribe import raise_incident
        from upstream_dagster.narrator import Narrator

        fix, sim = incident_simulation
        spec = _spec(settings)
        narrator = Narrator(spec.policies.reliability.budgets.model_calls)
        v = ops.verdict_step(spec, incident_triage, incident_evidence, fix, sim, narrator)
        record = records.record_path(settings, v.key)
        records.write(record, records.make_record(incident_triage, incident_evidence, fix, sim, v))
        context.log.info(f"{v.headline()}; notified: {', '.join(v.owners) or 'no owner'}")
        graph = open_graph(datahub.target(settings))
        try:
            receipt = raise_incident(graph, v)
        finally:
            graph.close()
        return dg.Output(
            v,
            metadata={
                **verdict_metadata(v),
                # on a GMS the server names the incident; the receipt carries its URN
                "incident": receipt.urn,
                "incident_written": receipt.written,
                "record": dg.MetadataValue.path(str(record)),
                "approve": "launch incident_writeback_job for this partition with "
                f"verdict_digest {v.digest}, or `upstream approve --incident {v.key}`",
            },
        )

    @dg.asset(
        partitions_def=incidents,
        group_name=GROUP,
        deps=[],
        pool=WRITEBACK_POOL,
        description="Applies an approved fix to the deployed dbt project (never the tracked "
        "one), rebuilds through estate_refresh, resolves the incident only if the failing check "
        "then passes, and writes the runbook, memory properties, tags and guard assertions. "
        "Never runs by itself: a reviewer launches it with the verdict's digest.",
    )
    def incident_writeback(
        context: dg.AssetExecutionContext,
        config: IncidentApproval,
        incident_verdict: Verdict,
        datahub: DataHubResource,
    ) -> dg.MaterializeResult:
        from upstream_dagster.defs.incident_writeback import write_back

        target = datahub.target(settings)
        return write_back(context, target, _spec(settings), config, incident_verdict)

    job = dg.define_asset_job(
        "reliability",
        selection=dg.AssetSelection.assets(
            incident_triage, incident_evidence, incident_simulation, incident_verdict
        ),
        partitions_def=incidents,
        description="Investigate one incident (a partition): triage, evidence, simulation, "
        "verdict. The failing_assertions sensor launches it; so does `upstream investigate`.",
    )
    writeback_job = dg.define_asset_job(
        "incident_writeback_job",
        selection=dg.AssetSelection.assets(incident_writeback),
        partitions_def=incidents,
        tags=WRITEBACK_TAGS,
        description="Apply an approved incident fix and write what was learned into DataHub. "
        "Launch it for the incident's partition with the verdict digest and your name.",
    )
    assets = [
        incident_triage,
        incident_evidence,
        incident_simulation,
        incident_verdict,
        incident_writeback,
    ]
    return assets, (job, writeback_job, failing_assertions_sensor(settings, job))


def failing_assertions_sensor(settings: Settings, job: Any) -> dg.SensorDefinition:
    @dg.sensor(
        job=job,
        minimum_interval_seconds=60,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Polls DataHub for failing assertion run events newer than its cursor. "
        "Each failing dataset becomes one incident: a dynamic partition keyed by the assertion "
        "and its event time, and one run of the reliability job.",
    )
    def failing_assertions(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        from upstream_dagster.datahub import open_graph
        from upstream_dagster.datahub.incidents import failing_runs, incident_key

        cursor = int(context.cursor) if context.cursor else None
        graph = open_graph(settings)
        try:
            runs = failing_runs(graph, cursor)
        finally:
            graph.close()
        first: dict[str, Any] = {}
        for run in runs:  # one incident per failing dataset in this poll
            first.setdefault(run.asserted_urn, run)
        keys = [incident_key(r) for r in first.values()]
        known = set(context.instance.get_dynamic_partitions(incidents.name))
        new = [k for k in keys if k not in known]
        newest = max([r.timestamp_ms for r in runs], default=cursor or 0)
        return dg.SensorResult(
            run_requests=[dg.RunRequest(run_key=k, partition_key=k) for k in new],
            dynamic_partitions_requests=[incidents.build_add_request(new)] if new else [],
            cursor=str(newest) if newest else context.cursor,
        )

    return failing_assertions


def waiting_incidents(instance: dg.DagsterInstance, settings: Settings) -> list[str]:
    """Concluded incidents with an actionable fix that nobody has approved yet."""
    records = instance.fetch_materializations(dg.AssetKey("incident_verdict"), limit=200).records
    latest: dict[str, Any] = {}
    for record in records:
        mat = record.asset_materialization
        if mat is not None and mat.partition and mat.partition not in latest:
            latest[mat.partition] = mat.metadata
    out = []
    for key, meta in sorted(latest.items()):
        digest = str(meta["verdict_digest"].value)
        if not meta["concluded"].value or meta["remedy"].value in ("none", "escalate"):
            continue
        if gate.claimed_by(settings.state_dir, f"incident-{digest}"):
            continue
        out.append(
            f"incident {key}: {meta['conclusion'].value}; fix: {meta['remedy'].value} "
            f"(digest {digest})"
        )
    return out
