"""An approved incident fix, in two steps with the estate's own rebuild between them.

`apply_fix` (the `incident_fix` asset): the gate decided, the patch is applied to the deployed
dbt project (never the tracked one) and the manifest parsed again. Then `estate_refresh`
rebuilds, runs every check and re-ingests, as a job of its own. `resolve` (the
`incident_resolution` asset): the failing check is read back from DataHub; only if it passes is
the incident resolved and the runbook, memory, tags and guard assertions written. Every write
keeps its pre-image, so `upstream reset` undoes an incident's write-back like a batch.
"""

from __future__ import annotations

from dataclasses import dataclass

from upstream_dagster import clock, gate
from upstream_dagster.datahub import scribe
from upstream_dagster.datahub.model import Written
from upstream_dagster.datahub.probe import GraphProbe
from upstream_dagster.datahub.protocol import MetadataGraph
from upstream_dagster.errors import UpstreamError
from upstream_dagster.reliability.verdict import Verdict
from upstream_dagster.spec.urns import short
from upstream_dagster.state import claims
from upstream_dagster.warehouse.dbt_project import DbtProject
from upstream_dagster.warehouse.sandbox import apply_patch

# remedies that change what the warehouse holds, so the estate must be rebuilt before the
# failing check can pass
REBUILDS = ("patch", "revert", "rerun", "reload")


def claim_key(v: Verdict) -> str:
    """The claim that makes an incident's fix happen at most once."""
    return claims.key_for("fix", v.digest)


def subject(v: Verdict) -> gate.Subject:
    return gate.Subject(
        "fix",
        v.digest,
        v.digest,
        ((v.key, v.risk.score),) if v.concluded else (),
        f"the investigation abstained: {v.headline()}",
    )


@dataclass(frozen=True)
class FixApplied:
    applied: str  # what changed in the deployed project, or "nothing to apply"
    rebuild: bool  # the estate must be rebuilt before the check can pass


def apply_fix(project: DbtProject, v: Verdict) -> FixApplied:
    if v.remedy.action in ("patch", "revert"):
        problem = apply_patch(project.project_dir, v.remedy.diff)
        if problem:
            raise UpstreamError(
                f"the patch no longer applies to the deployed project: {problem}",
                "re-run the reliability job for this incident to construct a current patch",
            )
        project.parse()
        return FixApplied(
            f"patched {', '.join(v.remedy.files)} in {project.project_dir}", rebuild=True
        )
    return FixApplied("nothing to apply", rebuild=v.remedy.action in REBUILDS)


def _waiting_on_feed(v: Verdict) -> str:
    """What resolves an incident whose fix is the feed's to make: approving it here rebuilds,
    but changes nothing the check reads until the data is delivered again."""
    if v.remedy.action != "reload":
        return ""
    feed = short(v.cause) if v.cause else "the feed"
    return (
        f"; the fix is the feed's: {v.remedy.summary}. Once {feed} is delivered again and the "
        "estate rebuilt, launch incident_resolution_job for this incident's partition to read "
        "the check again (the incident stays open until it passes)"
    )


def check_passes(graph: MetadataGraph, v: Verdict) -> tuple[bool, str]:
    """The failing check's latest result in DataHub, since the symptom."""
    runs = [
        r
        for r in graph.assertion_runs(None, v.window.symptom_ms, latest_only=True)
        if r.assertion_urn == v.check.assertion
    ]
    if not runs:
        return False, "the failing check has not run since the fix" + _waiting_on_feed(v)
    latest = runs[-1]
    passed = latest.result == "SUCCESS"
    said = f"{v.check.description or v.check.assertion}: {latest.result}"
    return passed, said if passed else said + _waiting_on_feed(v)


def _blast_radius(graph: MetadataGraph, v: Verdict) -> tuple[str, ...]:
    """Dashboards and charts downstream of the cause (a warm run did not read lineage)."""
    if v.cause is None:
        return ()
    return GraphProbe(graph, v.window, budget=10).consumers(v.cause)


@dataclass(frozen=True)
class Resolution:
    resolved: bool
    message: str  # the failing check's result after the fix
    written: tuple[Written, ...]  # every write, each with its pre-image
    minutes: float = 0.0  # from the symptom to its resolution, as the post-mortem says it
    resolved_ms: int = 0  # when it was resolved (wall time, as DataHub stamps events)

    @property
    def writes(self) -> int:
        return sum(1 for w in self.written if w.receipt.written)

    @property
    def failed(self) -> int:
        return len(self.written) - self.writes


def resolve(graph: MetadataGraph, v: Verdict, immunize: bool, approved_by: str = "") -> Resolution:
    passed, message = check_passes(graph, v)
    closed = scribe.close_incident(graph, v, passed, message)
    written = [closed]
    minutes, now = 0.0, clock.observed_ms()
    if passed:
        minutes = (now - v.window.symptom_ms) / 60000
        # cite the incident by the URN DataHub holds it under (a GMS names it itself)
        incident = closed.receipt.urn if closed.receipt.written else None
        # the datasets between cause and symptom, the symptom, and the dashboards beyond
        path = v.ranked[0][0].path[1:] if v.ranked else ()
        impacted = (*path, *(v.consumers or _blast_radius(graph, v)))
        document = scribe.post_mortem(graph, v, impacted, minutes, approved_by, incident)
        written += document
        held = next((w.receipt.urn for w in document if w.receipt.written), None)
        written += scribe.runbook(graph, v, incident, held)
        written += scribe.remember(graph, v, minutes)
        written += scribe.tag_blast_radius(graph, v, impacted)
        if immunize:
            written += scribe.guard_assertions(graph, v)
    return Resolution(passed, message, tuple(written), minutes, now if passed else 0)
