"""Approving from the Dagster UI with nothing to type but who you are: links that open a
write-back job's launchpad with its run config (digest, one-time value, what is approved) and
its tags already filled in, through the launchpad's own setup route (`/guess/JOB/playground/
setup?config=...&tags=...`, which finds the job's code location itself).

A link decides nothing: the run it launches asks the gate like any other, with the digest, the
one-time value and the reviewer's proof, and a stale or replayed link is refused and says why.
The prefilled values are the ones the asset already shows; the reviewer types their name (and,
where estate.yaml asks for signed approvals, pastes the `upstream sign` line it names).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote, quote_plus, urlencode

import dagster as dg
from pydantic import model_validator

from upstream_dagster.spec.models import Policies

LAUNCHED_BY = "upstream/launched-by"  # launchpad, cli, or sensor:NAME: why the run exists
APPROVING = "upstream/approving"  # what a launchpad link approves, as its link named it
# How often the sensors that hand a run's outcome on to the next job look (a fix applied ->
# its rebuild -> the incident resolved; a failed build -> its investigation). A tick with no
# new run outcome reads Dagster's run storage and nothing else, so a short interval costs
# little, and each hand-off is a wait a reviewer sits through after approving in the UI
# (Dagster's default is 30 s).
HANDOFF_SECONDS = 10

# A requirement's proposals, as a reviewer names the group
GROUPS = {
    "require_owner": "owners",
    "require_description": "descriptions",
    "require_domain": "domains",
    "require_glossary_term": "glossary terms",
    "min_assertions": "assertions",
    "column_descriptions": "column descriptions",
}


class LaunchConfig(dg.Config):
    """A launchpad's typed config. A key left blank (``nonce:`` is YAML's null) means what
    leaving it out means, its default, instead of a validation traceback in a failed run: the
    gate then says what is missing (an approval with no one-time value is refused, saying so)."""

    @model_validator(mode="before")
    @classmethod
    def _blank_is_default(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {key: value for key, value in data.items() if value is not None}
        return data


def launchpad(job: str, config: str, tags: Mapping[str, str]) -> str:
    """A link (relative to the UI) to ``job``'s launchpad holding ``config`` and ``tags``."""
    query: list[tuple[str, str]] = [("config", config)]
    for i, (key, value) in enumerate(tags.items()):
        query += [(f"tags[{i}][key]", key), (f"tags[{i}][value]", value)]
    # spaces as "+" and the characters a query keeps as they are: a link short enough for the
    # UI to show it inline (it folds Markdown of 1,000 characters or more behind a button)
    encoded = urlencode(query, quote_via=lambda v, *_: quote_plus(v, safe=":/,'@~"))
    return f"/guess/{quote(job)}/playground/setup?{encoded}"


def incident_page(key: str) -> str:
    """An incident's page in the UI: its incident_verdict partition (relative to the UI)."""
    return f"/assets/incident_verdict?view=partitions&partition={quote(key, safe='')}"


def _identity(policies: Policies, kind: str, digest: str) -> list[str]:
    """The lines a reviewer fills in: their name, and their proof when estate.yaml asks one."""
    names = " or ".join(policies.approvers) or "nobody is listed"
    lines = [f"reviewer: ''  # your name: {names}"]
    if policies.identity == "signed":
        lines.append(
            f"proof: ''  # paste what `upstream sign --kind {kind} --digest {digest} "
            "--reviewer YOUR_NAME` prints (estate.yaml asks for signed approvals)"
        )
    elif policies.identity == "datahub":
        lines.append(
            "# estate.yaml says DataHub identifies approvers: a launchpad run carries no token "
            "and is refused; approve with `upstream approve` and your own DataHub token"
        )
    return lines


def batch_config(
    policies: Policies, digest: str, nonce: str, chosen: Sequence[tuple[str, str]] | None
) -> str:
    """The write-back's run config for a batch: every proposal (``chosen`` None) or the
    (id, what it is) pairs given, one a line, so deleting a line leaves a proposal out."""
    body = [
        *_identity(policies, "batch", digest),
        f"batch_digest: {digest}  # the batch you read",
        f"nonce: {nonce}  # good for one write",
    ]
    if chosen is None:
        body.append("approve: [all]")
    else:
        body.append("approve:  # delete the line of any proposal you do not approve")
        body += [f"  - {pid}  # {what}" for pid, what in chosen]
    return _ops("coverage_writeback", body)


def incident_config(policies: Policies, digest: str, nonce: str) -> str:
    """The incident write-back's run config for one verdict."""
    body = [
        *_identity(policies, "fix", digest),
        f"verdict_digest: {digest}  # the verdict you read",
        f"nonce: {nonce}  # good for one fix",
    ]
    return _ops("incident_fix", body)


def _ops(op: str, body: list[str]) -> str:
    return "\n".join(["ops:", f"  {op}:", "    config:", *(f"      {b}" for b in body)]) + "\n"


def link(text: str, url: str) -> str:
    """A markdown link; ``text`` may hold parentheses and brackets."""
    return f"[{text.replace('[', '(').replace(']', ')')}]({url})"


REVIEWER = "upstream/reviewer"  # who approved, once the gate let the write through
BATCH = "upstream/batch"  # the coverage batch a write-back run was launched for
GATE = "upstream/gate"  # what the gate decided: write, dry-run or refused


def by_sensor(name: str, why: str) -> dict[str, str]:
    """The tags of a run a sensor requests: which sensor, and the event it answers."""
    return {LAUNCHED_BY: f"sensor:{name}", "upstream/why": why[:200]}


def launched_by(tags: Mapping[str, str]) -> str:
    """Who launched a run, from its tags: the command line, a sensor, a schedule, or a person
    in the launchpad (what Dagster's own tags leave as "Manually launched")."""
    if tags.get(LAUNCHED_BY):
        return tags[LAUNCHED_BY]
    if tags.get("dagster/sensor_name"):
        return f"sensor:{tags['dagster/sensor_name']}"
    if tags.get("dagster/schedule_name"):
        return f"schedule:{tags['dagster/schedule_name']}"
    return "launchpad"


def tag_run(context: Any, tags: Mapping[str, str]) -> None:
    """Tags the run sets on itself once the gate decided, so runs can be filtered by who
    approved what: the values are what the gate checked, cut to a readable length (an
    incident key is whole; a 100 KB reviewer name is not)."""
    found = {k: v[:200] for k, v in tags.items() if v}
    if LAUNCHED_BY not in context.run.tags:
        found[LAUNCHED_BY] = launched_by(context.run.tags)
    context.instance.add_run_tags(context.run_id, found)
