"""The conformance dial as Dagster assets: estate_spec -> metadata_context -> conformance ->
violations. Each asset reads its inputs and resources, calls one service, and reports what a
person needs to read in the UI."""

import warnings

import dagster as dg

from upstream_dagster import clock
from upstream_dagster.conformance import detection
from upstream_dagster.conformance.context import MetadataContext
from upstream_dagster.conformance.risk import Violation
from upstream_dagster.conformance.score import Dial, render_markdown
from upstream_dagster.datahub.readpath import read_context
from upstream_dagster.defs.launch import LAUNCHED_BY
from upstream_dagster.defs.presentation import violations_records
from upstream_dagster.defs.resources import DataHubResource, UpstreamResource
from upstream_dagster.services import scoring
from upstream_dagster.spec import EstateSpec
from upstream_dagster.spec.urns import short

GROUP = "conformance"


@dg.asset(
    group_name=GROUP,
    kinds={"yaml"},
    description=(
        "estate.yaml, validated: the tiers of assets, the requirements each tier must "
        "meet, and the policies (actuation, approvers, risk, reliability budgets). Errors "
        "name file, line and fix."
    ),
)
def estate_spec(upstream: UpstreamResource) -> dg.Output[EstateSpec]:
    spec = upstream.spec()
    rows = "\n".join(
        f"| {t.name} | {len(t.match)} | {', '.join(t.requirements.active())} |" for t in spec.tiers
    )
    return dg.Output(
        spec,
        metadata={
            "file": upstream.estate_file,
            "tiers": len(spec.tiers),
            "actuation": spec.policies.actuation,
            "tiers_table": dg.MetadataValue.md(
                "| tier | selectors | requirements |\n|---|---:|---|\n" + rows
            ),
        },
    )


def _observe_datahub(datahub: DataHubResource) -> dg.DataVersion:
    with datahub.graph() as graph:
        return dg.DataVersion(scoring.graph_version(graph))


# Observable source assets are marked beta in Dagster 1.13; the warning says nothing a user can
# act on, so it is not printed on every command.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", dg.BetaWarning)
    datahub_graph = dg.observable_source_asset(
        key="datahub",
        group_name="datahub",
        tags={"dagster/kind/datahub": ""},  # the decorator takes no kinds= yet
        description=(
            "The DataHub graph Upstream reads and writes (DataHub Lite, or the GMS that "
            "DATAHUB_GMS_URL names). Observing it records a data version that changes when "
            "datasets, lineage, assertion results, descriptions, domains, terms, tags or owners "
            "change (the observe_datahub schedule; datahub_changed then scores), and the lineage "
            "reads as one flow: the build writes DataHub, the score reads it."
        ),
    )(_observe_datahub)


@dg.asset(
    group_name=GROUP,
    kinds={"datahub"},
    deps=[datahub_graph, dg.AssetKey("warehouse_profiles")],
    description=(
        "Everything the dial reasons over, read from DataHub in nine slices (asset search, "
        "lineage, assertions, schema fields, governance, glossary, documentation, "
        "surroundings, ownership). "
        "Each slice reports the transport that answered it, its DataHub calls, and any "
        "fallback."
    ),
)
def metadata_context(
    context: dg.AssetExecutionContext, datahub: DataHubResource, upstream: UpstreamResource
) -> dg.Output[MetadataContext]:
    found = detection.load(upstream.settings().state_dir)  # the last `upstream detect`
    with datahub.graph() as graph:
        ctx = detection.with_detection(read_context(graph, clock.now_ms()), found, upstream.spec())
    table = "| slice | transport | calls | items | note |\n|---|---|---:|---:|---|\n" + "".join(
        f"| {s.name} | {s.transport}{' (fallback: ' + s.fallback + ')' if s.fallback else ''}"
        f" | {s.calls} | {s.items} | {s.note} |\n"
        for s in ctx.slices
    )
    for s in ctx.slices:
        if s.fallback:
            context.log.warning(f"slice {s.name} fell back: {s.fallback}")
    return dg.Output(
        ctx,
        metadata={
            "datahub_calls": ctx.calls,
            "assets": len(ctx.assets),
            "datasets": len(ctx.datasets()),
            "transport": ctx.transport,
            "slices": dg.MetadataValue.md(table),
        },
    )


@dg.asset(
    kinds={"datahub", "python"},
    group_name=GROUP,
    description=(
        "The dial: estate.yaml scored against DataHub per check, by tier, by requirement "
        "and overall. Tier selectors resolve through DataHub search on every run, so a new "
        "model is in scope with no configuration change. Plots overall and per-tier percent "
        "over time."
    ),
)
def conformance(
    estate_spec: EstateSpec, metadata_context: MetadataContext, datahub: DataHubResource
) -> dg.Output[Dial]:
    with datahub.graph() as graph:
        dial = scoring.dial_of(graph, estate_spec, metadata_context)
    metadata: dict[str, dg.RawMetadataValue] = {
        "overall_percent": dg.MetadataValue.float(dial.overall.percent),
        "checks": dial.overall.checks,
        "passed": dial.overall.passed,
        "not_evaluable": dial.overall.not_evaluable,
        "assets": dial.overall.assets,
        "unmatched_datasets": len(dial.unmatched),
        "dial": dg.MetadataValue.md(render_markdown(dial)),
    }
    for name, tally in dial.by_tier:
        metadata[f"percent {name}"] = dg.MetadataValue.float(tally.percent)
    caught = detection.caught_share(dial.results)
    if caught is not None:  # a plot of detection over the runs, once it was measured
        metadata["fault_detection_percent"] = dg.MetadataValue.float(round(100 * caught, 2))
    # Incident counts as numbers, so the UI plots them over the nightly runs beside the dial.
    states = {i.urn: i.state for a in metadata_context.assets for i in a.incidents}
    metadata["incidents_active"] = dg.MetadataValue.int(
        sum(1 for st in states.values() if st == "ACTIVE")
    )
    metadata["incidents_resolved"] = dg.MetadataValue.int(
        sum(1 for st in states.values() if st == "RESOLVED")
    )
    return dg.Output(dial, metadata=metadata)


@dg.asset(
    kinds={"datahub", "python"},
    group_name=GROUP,
    description=(
        "Every failing or unevaluable check, ranked by risk computed from graph facts; "
        "each row shows the arithmetic behind its risk."
    ),
)
def violations(
    estate_spec: EstateSpec, metadata_context: MetadataContext, conformance: Dial
) -> dg.Output[list[Violation]]:
    ranked = list(scoring.ranked(metadata_context, estate_spec, conformance))
    lines = [
        "| # | risk | asset | tier | requirement | why | risk arithmetic |",
        "|---:|---:|---|---|---|---|---|",
    ]
    for i, v in enumerate(ranked[:200], 1):
        lines.append(
            f"| {i} | {v.risk.score:.3f} | {short(v.check.asset)} | {v.check.tier} "
            f"| {v.check.requirement} | {v.check.reason} | {v.risk.explain()} |"
        )
    note = "" if ranked else "\n\nNo violations: every check passes."
    return dg.Output(
        ranked,
        metadata={
            "violations": len(ranked),
            "violations_table": violations_records(ranked, metadata_context.label),
            "ranked": dg.MetadataValue.md("\n".join(lines) + note),
        },
    )


@dg.asset_check(
    asset=conformance,
    description=(
        "Every tier selector in estate.yaml matches at least one asset in DataHub; a selector "
        "that matches nothing is usually a typo in a domain, tag or name pattern."
    ),
)
def every_selector_matches(conformance: Dial) -> dg.AssetCheckResult:
    empty = [h.name() for h in conformance.selector_hits if not h.matched]
    return dg.AssetCheckResult(
        passed=not empty,
        metadata={"empty_selectors": ", ".join(empty) or "none"},
        description=("selectors matching nothing: " + ", ".join(empty)) if empty else None,
    )


@dg.asset_check(
    asset=conformance,
    description="Warns when overall conformance fell since the previous materialization.",
)
def conformance_did_not_fall(
    context: dg.AssetCheckExecutionContext, conformance: Dial
) -> dg.AssetCheckResult:
    records = context.instance.fetch_materializations(dg.AssetKey("conformance"), limit=2)
    previous = None
    if len(records.records) > 1:
        event = records.records[1].asset_materialization
        if event is not None and "overall_percent" in event.metadata:
            previous = float(str(event.metadata["overall_percent"].value))
    now = conformance.overall.percent
    fell = previous is not None and now < previous
    return dg.AssetCheckResult(
        passed=not fell,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "previous_percent": previous if previous is not None else "none yet",
            "current_percent": now,
        },
    )


ASSETS = [estate_spec, metadata_context, conformance, violations]
CHECKS = [every_selector_matches, conformance_did_not_fall]
score_job = dg.define_asset_job(
    "score",
    # The blocking gate check must never sit in the nightly job: a failed blocking check
    # fails its whole run. It runs only in the write-back job.
    selection=dg.AssetSelection.assets(*ASSETS, "proposals", "approval_queue").without_checks()
    | dg.AssetSelection.checks(*CHECKS),
    description="Score estate.yaml against DataHub: read the graph, compute the dial, rank "
    "the violations by risk, and plan the priced proposals. `upstream score` runs it; the "
    "nightly schedule runs it at 02:00.",
)
nightly = dg.ScheduleDefinition(
    name="nightly_score",
    job=score_job,
    cron_schedule="0 2 * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    tags={LAUNCHED_BY: "schedule:nightly_score"},
    description="The nightly score, so the dial's history plots in the UI.",
)
defs = dg.Definitions(
    assets=[*ASSETS, datahub_graph], asset_checks=CHECKS, jobs=[score_job], schedules=[nightly]
)
