"""A nudge when a person is needed: one message per new waiting item to a webhook.

What waits: the coverage batch (until someone writes it), an incident's fix (until approved),
an investigation that abstained (until a person settles the probe it names). The `nudge`
sensor sends each item once, in Slack's incoming-webhook shape (``{"text": ...}``), with what
waits, its price or confidence, and the command or launchpad link to act. A send that fails is
logged and tried again on the next ticks, up to ``notify.attempts``; it never blocks a run.
A send is bounded in total time (SEND_SECONDS, however slowly the webhook answers) and a tick
in the time all its sends take (TICK_SECONDS): a slow webhook never holds the daemon.
"""

from __future__ import annotations

import http.client
import json
import os
import time
from dataclasses import dataclass

import dagster as dg

from upstream_dagster.datahub.incident_keys import short_id
from upstream_dagster.defs import journal
from upstream_dagster.defs.launch import incident_page
from upstream_dagster.defs.resources import UpstreamResource
from upstream_dagster.defs.webhook import Late, post_json
from upstream_dagster.spec.models import Notify
from upstream_dagster.state import claims

SEND_SECONDS = 15.0  # connect, send and the whole answer of one nudge
TICK_SECONDS = 45.0  # a send starts only if its whole SEND_SECONDS fits in the tick's budget


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
                f"Approve: `upstream approve --all --digest {digest} --reviewer NAME`, or in the "
                f"UI: {ui}/assets/proposals (its approve link opens coverage_writeback_job "
                "with the batch filled in)",
            )
        )
    for v in journal.waiting_verdicts(instance, upstream.gate):
        ident = short_id(v.key)
        out.append(
            Waiting(
                f"fix-{v.digest}",
                f"Incident {ident} ({v.key}): {v.conclusion} (confidence {v.confidence:.2f}). "
                f"The {v.remedy} waits for approval.\n"
                f"Read it and approve it: {ui}{incident_page(v.key)}, or `upstream show "
                f"{ident}` and `upstream approve --incident {ident} --reviewer NAME`",
            )
        )
    for v in journal.verdicts(instance):
        if not v.concluded:
            out.append(
                Waiting(
                    f"abstained-{v.digest}",
                    f"Incident {short_id(v.key)} ({v.key}) needs a person: the investigation "
                    f"abstained ({v.conclusion}, confidence {v.confidence:.2f}).\n"
                    f"What would settle it: {ui}{incident_page(v.key)}, or `upstream show "
                    f"{short_id(v.key)}`",
                )
            )
    return out


def send(url: str, text: str) -> str | None:
    """Post one message within SEND_SECONDS; None when it was delivered, else why not (a retry
    on a later tick, never a crash)."""
    try:
        status, body = post_json(url, {"text": text}, SEND_SECONDS)
    except Late as exc:
        return str(exc)
    except (OSError, http.client.HTTPException, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None if status == 200 else f"HTTP {status}: {body[:200]}"


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
    done, failed, later = [], [], 0
    ends = time.monotonic() + TICK_SECONDS
    for item in waiting(context.instance, upstream, notify.ui_url.rstrip("/")):
        if item.key in sent or tries.get(item.key, 0) >= notify.attempts:
            continue
        if time.monotonic() + SEND_SECONDS > ends:
            later += 1  # not tried, so not counted: the next tick sends it
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
    if later:
        context.log.warning(
            f"{later} nudge(s) left for the next tick: this tick's {TICK_SECONDS:g} s for "
            "sending is spent (is the webhook slow?)"
        )
    return dg.SkipReason(
        f"sent {len(done)} nudge(s), {len(failed)} failed"
        + (f", {later} left for the next tick" if later else "")
    )


defs = dg.Definitions(sensors=[nudge])
