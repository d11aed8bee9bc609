"""An incident as a reviewer follows it in the Dagster UI: from the red check to its incident in
one click, and from the incident to its approval.

When an investigation concludes, the failing check's latest result in Dagster (the dbt test or
the estate.yaml monitor on the dataset) gets the investigation beside it: a result reported
again, still failing, carrying a link to the incident's page (the `incident_verdict` partition)
and the conclusion. The incident's page links to a launchpad with the fix's approval filled in.
"""

from __future__ import annotations

import dagster as dg

from upstream_dagster.datahub.incident_keys import short_id
from upstream_dagster.defs import launch
from upstream_dagster.defs.launch import incident_page
from upstream_dagster.reliability.verdict import Verdict
from upstream_dagster.services.investigation import Triage
from upstream_dagster.spec.models import Policies
from upstream_dagster.spec.urns import dataset_name

INCIDENT_JOB = "incident_writeback_job"
INCIDENT_TAG = "upstream/incident"  # on a check result: the incident it opened


def actionable(v: Verdict) -> bool:
    return v.concluded and v.remedy.action not in ("none", "escalate")


def approve_markdown(v: Verdict, nonce: str, policies: Policies) -> str:
    """How to approve this incident's fix: a link to the launchpad with it filled in."""
    ident = short_id(v.key)
    cli = f"`upstream approve --incident {ident} --reviewer NAME`"
    if not actionable(v):
        why = "no patch applies" if v.concluded else "it abstained: " + v.probe()
        return f"Nothing to approve: {why}."
    config = launch.incident_config(policies, v.digest, nonce)
    tags = {
        launch.LAUNCHED_BY: "launchpad",
        launch.APPROVING: f"incident {ident}",
        "dagster/partition": v.key,
    }
    url = launch.launchpad(INCIDENT_JOB, config, tags)
    return (
        f"{launch.link(f'Approve the fix for incident {ident}', url)}: the launchpad opens "
        "with it filled in; type your name after `reviewer:` and launch. The rebuild and the "
        f"re-check follow by themselves. Or: {cli}"
    )


def failing_check(instance: dg.DagsterInstance, t: Triage) -> dg.AssetCheckKey | None:
    """The Dagster check behind the failing assertion, as the event log knows it: the dbt
    test, or the estate.yaml monitor, on the asset named as the symptom's table (None when
    no such check has a result)."""
    if t.dbt_test and t.dbt_test.count(".") >= 2:
        name = t.dbt_test.split(".")[2]
    elif t.monitor:
        name = f"monitor_{t.monitor}"
    else:
        return None
    table = dataset_name(t.trigger.symptom).rsplit(".", 1)[-1].lower()
    for asset in instance.get_asset_keys():
        if asset.path and asset.path[-1].lower() == table:
            key = dg.AssetCheckKey(asset, name)
            if instance.get_latest_asset_check_evaluation_record(key) is not None:
                return key
    return None


def latest_failure(
    instance: dg.DagsterInstance, key: dg.AssetCheckKey
) -> dg.AssetCheckEvaluation | None:
    """The check's latest result, when it is a failure. A run that planned the check and never
    evaluated it (dbt skipped the test below a failure) leaves no result: Dagster's record then
    holds the plan, which says nothing of pass or fail."""
    latest = instance.get_latest_asset_check_evaluation_record(key)
    evaluation = latest.evaluation if latest is not None else None
    if not isinstance(evaluation, dg.AssetCheckEvaluation) or evaluation.passed:
        return None
    return evaluation


def link_to_failing_check(
    context: dg.AssetExecutionContext, t: Triage, v: Verdict, incident_urn: str
) -> str:
    """Report the failing check's result again, still failing, with the incident beside it;
    only while its latest result in Dagster is a failure. Returns the check it marked ("" when
    none)."""
    key = failing_check(context.instance, t)
    if key is None:
        return ""
    evaluation = latest_failure(context.instance, key)
    if evaluation is None:
        return ""
    ident = short_id(v.key)
    context.instance.report_runless_asset_event(
        dg.AssetCheckEvaluation(
            asset_key=key.asset_key,
            check_name=key.name,
            passed=False,
            severity=evaluation.severity,
            description=f"still failing; investigated as incident {ident}: {v.headline()}",
            metadata={
                **{k: v for k, v in evaluation.metadata.items() if k not in _OURS},
                "incident": dg.MetadataValue.url(incident_page(v.key)),
                "incident_id": ident,
                "conclusion": v.headline(),
                "datahub_incident": incident_urn,
            },
        )
    )
    context.log.info(f"check {key.to_user_string()} links to incident {ident}")
    return key.to_user_string()


_OURS = {"incident", "incident_id", "conclusion", "datahub_incident"}
