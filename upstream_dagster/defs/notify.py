"""A nudge when a person is needed: one message per new waiting item to a webhook.

What waits: the coverage batch (until someone writes it), an incident's fix (until approved),
an investigation that abstained (until a person settles the probe it names). The `nudge`
sensor sends each item once, in Slack's incoming-webhook shape (Slack's own SDK), with what
waits, its price or confidence, and the command or launchpad link to act. A send that fails is
logged and tried again on the next ticks, up to ``notify.attempts``; it never blocks a run.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import dagster as dg
from slack_sdk.webhook import WebhookClient

from upstream_dagster.defs import journal
from upstream_dagster.defs.resources import UpstreamResource
from upstream_dagster.spec.models import Notify
from upstream_dagster.state import claims


@dataclass(frozen=True)
class Waiting:
    key: str  # the same item always has the same key: never sent twice
    text: str


def waiting(instance: dg.DagsterInstance, upstream: UpstreamResource, ui: str) -> list[Waiting]:
    out: list[Waiting] = []
    planned = journal.latest(instance, journal.PROPOSALS)
    digest = str(planned.get("batch_digest") or "")
    if (
        digest
        and int(planned.get("proposals") or 0)
        and not claims.claimed_by(upstream.gate, digest)
    ):
        out.append(
            Waiting(
                f"batch-{digest}",
                f"Coverage batch {digest} waits for approval: {planned.get('proposals')} "
                f"proposals, conformance {float(planned.get('percent_before', 0)):.1f}% -> "
                f"{float(planned.get('percent_projected', 0)):.1f}% projected.\n"
                f"Approve: `upstream approve --all --digest {digest} --reviewer NAME`, or "
                f"{ui}/jobs/coverage_writeback_job/playground",
            )
        )
    for v in journal.waiting_verdicts(instance, upstream.gate):
        out.append(
            Waiting(
                f"fix-{v.digest}",
                f"Incident {v.key}: {v.conclusion} (confidence {v.confidence:.2f}). "
                f"The {v.remedy} waits for approval.\n"
                f"Read it: `upstream show {v.key}`; approve: `upstream approve --incident "
                f"{v.key} --reviewer NAME`, or {ui}/jobs/incident_writeback_job/playground",
            )
        )
    for v in journal.verdicts(instance):
        if not v.concluded:
            out.append(
                Waiting(
                    f"abstained-{v.digest}",
                    f"Incident {v.key} needs a person: the investigation abstained "
                    f"({v.conclusion}, confidence {v.confidence:.2f}).\n"
                    f"What would settle it: `upstream show {v.key}`",
                )
            )
    return out


def send(url: str, text: str) -> str | None:
    """Post one message; None when it was delivered, else why not."""
    try:
        response = WebhookClient(url, timeout=10).send(text=text)
    except Exception as exc:  # noqa: BLE001 - any network failure is a retry, never a crash
        return f"{type(exc).__name__}: {exc}"
    return None if response.status_code == 200 else f"HTTP {response.status_code}: {response.body}"


@dg.sensor(
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Sends one message per new item waiting on a person (a coverage batch, an "
    "incident fix, an abstention) to the webhook estate.yaml's policies.notify names. "
    "Never twice for the same item; a failing webhook is retried on later ticks and logged.",
)
def nudge(context: dg.SensorEvaluationContext, upstream: UpstreamResource) -> dg.SkipReason:
    notify: Notify | None = upstream.spec().policies.notify
    if notify is None:
        return dg.SkipReason("estate.yaml sets no policies.notify: no nudges")
    url = os.environ.get(notify.webhook_env, "")
    if not url:
        return dg.SkipReason(f"{notify.webhook_env} is not set: no webhook to nudge")
    state = json.loads(context.cursor or "{}")
    sent: list[str] = state.get("sent", [])
    tries: dict[str, int] = state.get("tries", {})
    done, failed = [], []
    for item in waiting(context.instance, upstream, notify.ui_url.rstrip("/")):
        if item.key in sent or tries.get(item.key, 0) >= notify.attempts:
            continue
        why = send(url, item.text)
        if why is None:
            sent.append(item.key)
            done.append(item.key)
        else:
            tries[item.key] = tries.get(item.key, 0) + 1
            failed.append(item.key)
            given_up = tries[item.key] >= notify.attempts
            context.log.warning(
                f"nudge for {item.key} failed ({why})"
                + ("; giving up on it" if given_up else "; trying again next tick")
            )
    context.update_cursor(json.dumps({"sent": sent[-500:], "tries": tries}))
    return dg.SkipReason(f"sent {len(done)} nudge(s), {len(failed)} failed")


defs = dg.Definitions(sensors=[nudge])
