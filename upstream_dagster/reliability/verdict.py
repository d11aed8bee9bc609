"""The verdict: the critic's conclusion, its risk and remedy, and the RCA written by code.

Every sentence of the root-cause analysis carries the index of the evidence it rests on.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from upstream_dagster.conformance.risk import Risk
from upstream_dagster.reliability.evidence import Evidence, Hypothesis, Score
from upstream_dagster.reliability.health import FailingCheck, Window, outcome
from upstream_dagster.reliability.relevance import history
from upstream_dagster.reliability.remediation import Remedy
from upstream_dagster.reliability.walk import Investigation
from upstream_dagster.spec.urns import relation_of


class Sim(NamedTuple):
    """The sandbox's result: the fix tried (did the check pass with it), and the control, the
    check run again without it."""

    ran: bool
    passed: bool
    message: str
    control_ran: bool = False
    control_passed: bool = False
    control_message: str = ""

    @property
    def verified(self) -> bool:
        """The fix turns the failing check green, and it stays red without it."""
        return self.ran and self.passed and self.control_ran and not self.control_passed

    @property
    def spurious(self) -> bool:
        """The check passes again with nothing changed: the failure does not reproduce."""
        return self.control_ran and self.control_passed

    @property
    def reproduced(self) -> bool:
        return self.control_ran and not self.control_passed


@dataclass(frozen=True)
class Verdict:
    key: str
    symptom: str
    check: FailingCheck
    window: Window
    ledger: tuple[Evidence, ...]
    ranked: tuple[tuple[Hypothesis, Score], ...]
    min_confidence: float
    remedy: Remedy
    simulation: Sim
    risk: Risk
    reads: int
    budgets: tuple[tuple[str, int, int], ...]  # (budget, used, limit)
    owners: tuple[str, ...] = ()
    consumers: tuple[str, ...] = ()
    memory_used: bool = False
    notes: tuple[str, ...] = field(default=())
    summary: str = ""  # the narrator's prose over summary_sentences(); "" = the template
    pull_request: str = ""  # the narrator's pull-request description; "" = the template
    unsettled: str = ""  # a tie at the top nothing splits, and the probe that would
    flaky: str = ""  # the check failed on data that, re-checked unchanged, passes: its history
    relevance: dict[tuple[str, str, str], str] = field(default_factory=dict)  # why, per hypothesis

    @property
    def top(self) -> tuple[Hypothesis, Score] | None:
        return self.ranked[0] if self.ranked else None

    @property
    def confidence(self) -> float:
        return self.ranked[0][1].confidence if self.ranked else 0.0

    @property
    def concluded(self) -> bool:
        return (
            self.top is not None
            and self.confidence >= self.min_confidence
            and not self.unsettled
            and not self.flaky
            and not self.ranked[0][1].coincidence
        )

    @property
    def cause(self) -> str | None:
        return self.ranked[0][0].cause if self.concluded else None

    @property
    def column(self) -> str | None:
        return self.ranked[0][0].column if self.concluded else None

    @property
    def failure_class(self) -> str | None:
        return self.ranked[0][0].failure_class if self.concluded else None

    @property
    def digest(self) -> str:
        body = {
            "key": self.key,
            "cause": self.cause,
            "column": self.column,
            "class": self.failure_class,
            "diff": self.remedy.diff,
            "action": self.remedy.action,
        }
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]

    def probe(self) -> str:
        """The one probe that would settle an abstention."""
        if not self.ranked:
            return (
                f"re-run {self.check.description or self.check.assertion}: no node upstream of "
                f"{relation_of(self.symptom)} changed, so a second failure would point at the "
                "check or at the asset itself"
            )
        if self.unsettled:
            return self.unsettled
        h, s = self.ranked[0]
        if not s.forensic:
            return f"query {relation_of(h.cause)} to confirm the {h.failure_class} directly"
        if not s.simulation:
            return f"simulate the fix on {relation_of(h.cause)} in a sandbox rebuild"
        return f"compare {relation_of(h.cause)} with its upstreams' run records"

    def why(self, h: Hypothesis) -> str:
        """Why a hypothesis is (or is not) a cause: its relevance, in a sentence."""
        return self.relevance.get((h.cause, h.column or "", h.failure_class), "")

    def headline(self) -> str:
        if self.flaky:
            return f"abstained: {self.flaky}"
        if self.top is not None and self.ranked[0][1].coincidence:
            h = self.ranked[0][0]
            return (
                f"abstained: the change at {relation_of(h.cause)} is a coincidence ({self.why(h)})"
            )
        if self.unsettled:
            return f"abstained (a tie at {self.confidence:.2f}): {self.probe()}"
        if not self.concluded:
            return (
                f"abstained (confidence {self.confidence:.2f} < {self.min_confidence}): "
                f"{self.probe()}"
            )
        h = self.ranked[0][0]
        col = f".{h.column}" if h.column else ""
        return (
            f"root cause {relation_of(h.cause)}{col} ({h.failure_class}), "
            f"confidence {self.confidence:.2f}"
        )


def rescore(inv: Investigation, sim: Sim) -> tuple[tuple[Hypothesis, Score], ...]:
    """Re-rank after the sandbox: the top hypothesis's fix verified or not; every hypothesis a
    coincidence when the check passes again on the same data; a failure that reproduces with
    nothing changed did not need its data to move in the window (it moved earlier, or where no
    profile sees), so only the path decides then. Equal confidences keep the investigation's
    order (`ranking.settle_ties`), never a name's."""
    out = []
    for i, (h, s) in enumerate(inv.ranked):
        rel = inv.relevance.get((h.cause, h.column or "", h.failure_class))
        coincidence = s.coincidence
        if rel is not None and sim.reproduced and rel.reaches is not False:
            coincidence = 0.0
        out.append(
            (
                h,
                replace(
                    s,
                    simulation=1.0 if i == 0 and sim.verified else s.simulation,
                    spurious=1.0 if sim.spurious else 0.0,
                    coincidence=coincidence,
                ),
            )
        )
    return tuple(sorted(out, key=lambda hs: (hs[1].coincidence, -hs[1].confidence)))


def flaky(inv: Investigation, sim: Sim) -> str:
    """The failing check named flaky, with its history, when it passes again on the same data."""
    if not sim.spurious:
        return ""
    check = inv.trigger.check.description or inv.trigger.check.assertion
    return (
        f"{check} is flaky: run again on the same data with nothing changed, it passes "
        f"({sim.control_message}); {history(inv)}"
    )


def unsettled(inv: Investigation, ranked: tuple[tuple[Hypothesis, Score], ...]) -> str:
    """The investigation's tie, if the simulation did not split it."""
    if len(ranked) > 1 and ranked[0][1].confidence == ranked[1][1].confidence:
        return inv.tie
    return ""


def _cite(ids: tuple[int, ...] | list[int]) -> str:
    return "".join(f"[E{i}]" for i in ids)


CLASS_TEXT = {
    "rename": "a renamed column",
    "column_removed": "a removed column",
    "type_change": "a changed column type",
    "not_rebuilt": "a model the build did not rebuild",
    "volume_drop": "lost rows",
    "volume_jump": "extra rows",
    "stale": "data that stopped arriving",
    "null_jump": "a jump in NULLs",
    "value_shift": "shifted values",
    "failing_check": "a failing check",
}


def _outcome(v: Verdict) -> str:
    """Failed, or could not evaluate when the trigger's own message says it could not look."""
    trigger = next((e for e in v.ledger if e.kind == "assertion" and e.subject == v.symptom), None)
    return outcome(dict(trigger.detail).get("message", "") if trigger else v.check.message)


def summary_sentences(v: Verdict) -> list[str]:
    """The RCA's summary: each sentence ends with the evidence it rests on. This is the
    template, and the only facts the narrator may put in other words."""
    by_index = {e.index: e for e in v.ledger}
    trigger = [e.index for e in v.ledger if e.kind == "assertion" and e.subject == v.symptom]
    check = v.check.description or v.check.assertion
    out = [f"{check} {_outcome(v)} on {relation_of(v.symptom)} {_cite(trigger[:1])}."]
    if v.top is None:
        out[0] = out[0][:-1] + f"; no node upstream of it changed {_cite(trigger[:1])}."
        if v.flaky:
            out.append(f"{v.flaky[:1].upper()}{v.flaky[1:]} {_cite(trigger[:1])}.")
        return out
    h, s = v.top
    own = [i for i in h.cites if by_index[i].subject == h.cause and by_index[i].kind != "lineage"]
    via = [i for i in h.cites if by_index[i].kind == "lineage"]
    col = f".{h.column}" if h.column else ""
    what = CLASS_TEXT.get(h.failure_class, h.failure_class.replace("_", " "))
    out.append(f"{relation_of(h.cause)}{col} shows {what} {_cite(own or list(h.cites))}.")
    if len(h.path) > 1 and via:
        out.append(
            f"Lineage carries it to the symptom: {' -> '.join(relation_of(u) for u in h.path)} "
            f"{_cite(via)}."
        )
    if s.coincidence:
        out.append(f"That is a coincidence: {v.why(h) or 'it does not reach the check'} "
                   f"{_cite(own or list(h.cites))}.")  # fmt: skip
    if v.flaky:
        out.append(f"{v.flaky[:1].upper()}{v.flaky[1:]} {_cite(trigger[:1])}.")
    verb = "concludes" if v.concluded else "does not conclude"
    out.append(
        f"Upstream {verb} at confidence {s.confidence:.2f} against a threshold of "
        f"{v.min_confidence:.2f} {_cite(own or list(h.cites))}."
    )
    return out


def pull_request_text(v: Verdict) -> str:
    """The fix's pull-request text: a title, the why (the narrator's or the template's), the
    change, how it was verified, and the diff."""
    if v.top is None or not v.remedy.diff:
        return ""
    h = v.top[0]
    col = f".{h.column}" if h.column else ""
    why = v.pull_request or " ".join(summary_sentences(v))
    sim = v.simulation
    checked = (
        f"rebuilt in a sandbox: "
        f"{'the failing check passes' if sim.passed else 'the check still fails'} ({sim.message})"
        + (f"; {sim.control_message}" if sim.control_ran else "")
        if sim.ran
        else f"not simulated: {sim.message}"
    )
    return "\n".join(
        [
            f"## Fix {h.failure_class.replace('_', ' ')} of {relation_of(h.cause)}{col}",
            "",
            why,
            "",
            f"Change: {v.remedy.summary} ({', '.join(v.remedy.files) or 'no file'}).",
            f"Verified: {checked}.",
            f"Incident: {v.key}; evidence as cited in its root-cause analysis.",
            "",
            "```diff",
            v.remedy.diff.rstrip(),
            "```",
        ]
    )


def rca_markdown(v: Verdict) -> str:
    lines = [f"**{v.headline()}**", ""]
    lines += [v.summary or " ".join(summary_sentences(v)), ""]
    if v.summary:
        lines += ["(Summary written by the narrator from the cited evidence.)", ""]
    trigger = next((e for e in v.ledger if e.kind == "assertion" and e.subject == v.symptom), None)
    lines.append(
        f"Symptom: {v.check.description or v.check.assertion} {_outcome(v)} on "
        f"{relation_of(v.symptom)}" + (f" {_cite([trigger.index])}" if trigger else "") + "."
    )
    if v.top is not None:
        h, s = v.top
        by_index = {e.index: e for e in v.ledger}
        lines.append("")
        lines.append("Why Upstream believes it:")
        for i in h.cites:
            e = by_index.get(i)
            if e is not None:
                lines.append(f"- {e.claim} [E{i}]")
        lines += ["", f"Confidence: {s.explain()}"]
    lines += ["", f"Risk: {v.risk.explain()}", ""]
    lines.append(f"Notified: {', '.join(v.owners) or 'no owner of the symptom in DataHub'}")
    lines.append("")
    lines.append(f"Remedy ({v.remedy.action}): {v.remedy.summary}")
    if v.remedy.reason:
        lines.append(f"No patch: {v.remedy.reason}")
    sim = v.simulation
    lines.append(
        "Simulation: "
        + (
            f"with the fix {'the check passes' if sim.passed else 'the check still fails'} "
            f"({sim.message})"
            if sim.ran
            else sim.message
        )
    )
    if sim.control_ran:
        verdict = (
            "verified: green with the fix, red without it"
            if sim.verified
            else ("the check passes without any fix" if sim.control_passed else "still red")
        )
        lines.append(f"Control: {sim.control_message} ({verdict})")
    if v.flaky:
        lines.append(f"Flaky: {v.flaky}")
    coincidences = [(h, s) for h, s in v.ranked if s.coincidence]
    if coincidences:
        lines += ["", "Coincidences (changes that do not explain this failure):"]
        for h, _ in coincidences[:5]:
            col = f".{h.column}" if h.column else ""
            lines.append(f"- {relation_of(h.cause)}{col} ({h.failure_class}): {v.why(h)}")
    if v.remedy.diff:
        lines += ["", "```diff", v.remedy.diff.rstrip(), "```"]
    lines += ["", "| budget | used | limit |", "|---|---|---|"]
    lines += [f"| {name} | {used} | {limit} |" for name, used, limit in v.budgets]
    if v.notes:
        lines += ["", *[f"Note: {n}" for n in v.notes]]
    lines += ["", "Evidence ledger:", ""]
    lines += [f"- E{e.index} ({e.kind}) {e.claim}" for e in v.ledger]
    return "\n".join(lines)
