"""The verdict: the critic's conclusion, its risk and remedy, and the RCA written by code.

Every sentence of the root-cause analysis carries the index of the evidence it rests on.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace

from upstream_dagster.conformance.risk import Risk
from upstream_dagster.reliability.evidence import Evidence, Hypothesis, Score
from upstream_dagster.reliability.health import FailingCheck, Window, outcome
from upstream_dagster.reliability.remediation import Remedy
from upstream_dagster.reliability.walk import Investigation
from upstream_dagster.spec.urns import relation_of


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
    simulation: tuple[bool, bool, str]  # ran, passed, message
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

    @property
    def top(self) -> tuple[Hypothesis, Score] | None:
        return self.ranked[0] if self.ranked else None

    @property
    def confidence(self) -> float:
        return self.ranked[0][1].confidence if self.ranked else 0.0

    @property
    def concluded(self) -> bool:
        return (
            self.top is not None and self.confidence >= self.min_confidence and not self.unsettled
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

    def headline(self) -> str:
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


def rescore(
    inv: Investigation, simulated: dict[int, float]
) -> tuple[tuple[Hypothesis, Score], ...]:
    """Re-rank after simulation: ``simulated`` maps a rank to its simulation component. Equal
    confidences keep the investigation's order (`ranking.settle_ties`), never a name's."""
    out = [
        (h, replace(s, simulation=simulated.get(i, s.simulation)))
        for i, (h, s) in enumerate(inv.ranked)
    ]
    return tuple(sorted(out, key=lambda hs: -hs[1].confidence))


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
    ran, passed, message = v.simulation
    checked = (
        f"rebuilt in a sandbox: {'the failing check passes' if passed else 'the check still fails'}"
        f" ({message})"
        if ran
        else f"not simulated: {message}"
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
    ran, passed, message = v.simulation
    lines.append(
        "Simulation: "
        + (
            f"{'the check passes' if passed else 'the check still fails'} ({message})"
            if ran
            else message
        )
    )
    if v.remedy.diff:
        lines += ["", "```diff", v.remedy.diff.rstrip(), "```"]
    lines += ["", "| budget | used | limit |", "|---|---|---|"]
    lines += [f"| {name} | {used} | {limit} |" for name, used, limit in v.budgets]
    if v.notes:
        lines += ["", *[f"Note: {n}" for n in v.notes]]
    lines += ["", "Evidence ledger:", ""]
    lines += [f"- E{e.index} ({e.kind}) {e.claim}" for e in v.ledger]
    return "\n".join(lines)
