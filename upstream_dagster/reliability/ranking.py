"""How hypotheses are ranked: the confidence of each (the evidence components its logistic
reads, `evidence.Score`) and how a tie at the top is settled or left to a person.

Pure, like the walk: it reads only the investigation built so far.
"""

from __future__ import annotations

from upstream_dagster.reliability import relevance
from upstream_dagster.reliability.evidence import Hypothesis, Score
from upstream_dagster.reliability.relevance import Reach
from upstream_dagster.reliability.walk import ROWS, Investigation, column_ancestors, reachable
from upstream_dagster.spec.urns import relation_of

# Most specific first: the finding that names a node's failure.
PRIORITY = (
    "rename",
    "column_removed",
    "type_change",
    "not_rebuilt",
    "volume_drop",  # before stale: losing rows also moves the newest timestamp back
    "volume_jump",
    "stale",
    "null_jump",
    "value_change",
    "value_shift",
    "code_change",  # a model's code: named by what it did to the data, where that shows
    "failing_check",
)
DATA_CLASSES = set(PRIORITY) - {"failing_check"}
# Failures of one column's values: column lineage must connect them to the symptom's column.
COLUMN_CLASSES = {
    "rename",
    "column_removed",
    "type_change",
    "null_jump",
    "value_shift",
    "value_change",
}
SCHEMA_CLASSES = {"rename", "column_removed", "type_change"}
CHANGED = {"rename": "renamed", "column_removed": "removed", "type_change": "retyped"}


def _day_finding(inv: Investigation, hyp: Hypothesis) -> bool:
    for f in inv.findings.get(hyp.cause, []):
        if f.failure_class == hyp.failure_class and f.column == hyp.column:
            return dict(inv.ledger[f.evidence].detail).get("partition", "table") != "table"
    return False


def score(
    inv: Investigation,
    hyp: Hypothesis,
    feeds_known: bool,
    simulation: float,
    reach: Reach | None = None,
) -> Score:
    kinds = {inv.ledger[i].kind for i in hyp.cites}
    # A node nothing was observed on neither supports nor contradicts the path.
    on_path = [n for n in hyp.path if n in inv.findings and (n in inv.observed or inv.findings[n])]
    if _day_finding(inv, hyp):
        # A one-day shift can only show on nodes whose days are profiled; the others neither
        # support nor contradict it.
        on_path = [n for n in on_path if n in inv.day_profiled or inv.findings[n]]
    support = sum(1 for n in on_path if inv.findings[n]) / max(len(on_path), 1)
    column_cited = any(inv.ledger[i].kind == "lineage" and inv.ledger[i].column for i in hyp.cites)
    if feeds_known and hyp.column and not column_cited and hyp.failure_class in COLUMN_CLASSES:
        support *= 0.5  # the column lineage does not connect this column to the symptom
    cause_times = [
        f.at_ms
        for f in inv.findings.get(hyp.cause, [])
        if f.failure_class in (hyp.failure_class, "code_change")
    ]
    temporal = 1.0 if any(inv.trigger.window.holds(t) for t in cause_times) else 0.0
    diversity = min(1.0, len(kinds - {"lineage", "memory"}) / 3)
    # Does the symptom show the failure in its own data (a profile or a run record past its
    # threshold), or does its failure message name the cause's column? A check that failed on
    # data that did not change (a timeout) shows neither.
    shows = any(
        f.failure_class in DATA_CLASSES - SCHEMA_CLASSES
        and not f.minor
        and inv.ledger[f.evidence].kind in ("profile", "run_record")
        for f in inv.findings.get(inv.trigger.symptom, [])
    )
    named = any(inv.ledger[i].kind == "run_record" and inv.ledger[i].column for i in hyp.cites)
    grain = any(dict(inv.ledger[i].detail).get("grain") for i in hyp.cites)
    rel = relevance.judge(inv, hyp, reach)
    inv.relevance[_key(hyp)] = rel
    return Score(
        support=round(support, 4),
        temporal=temporal,
        diversity=round(diversity, 4),
        memory=1.0 if hyp.from_memory else 0.0,
        timeline=1.0 if "timeline" in kinds else 0.0,
        forensic=1.0 if "forensic" in kinds else 0.0,
        simulation=simulation,
        hard=bool(kinds & {"timeline", "forensic", "run_record", "profile"}),
        effect=1.0 if shows or named else 0.0,
        coincidence=1.0 if rel.coincidence else 0.0,
        derived=1.0 if hyp.derived else 0.0,
        grain=1.0 if grain else 0.0,
    )


def _key(hyp: Hypothesis) -> tuple[str, str, str]:
    return (hyp.cause, hyp.column or "", hyp.failure_class)


def _explains(
    up: Hypothesis, down: Hypothesis, edges: tuple[tuple[tuple[str, str], tuple[str, str]], ...]
) -> bool:
    """Whether ``up``'s failure accounts for ``down``'s: lost or late rows upstream account for
    anything downstream; a column's failure accounts for a column it feeds (or for the rows,
    when it decides them)."""
    if up.column is None:
        return True
    target = (down.cause, down.column or ROWS)
    return (up.cause, up.column.lower()) in column_ancestors(edges, target)


def settle_ties(
    inv: Investigation, edges: tuple[tuple[tuple[str, str], tuple[str, str]], ...]
) -> None:
    """Hypotheses tied at the top are not ordered by name. One that lies upstream of each of
    the others and explains its failure comes first; otherwise the tie is left unsettled, and
    the verdict abstains naming the probe that would split them."""
    if len(inv.ranked) < 2 or inv.ranked[0][1].confidence != inv.ranked[1][1].confidence:
        return
    best = inv.ranked[0][1].confidence
    tied = [hs for hs in inv.ranked if hs[1].confidence == best]
    for h, s in tied:
        below = reachable(h.cause, _downstream(inv))
        others = [o for o, _ in tied if o is not h]
        if all(o.cause in below and _explains(h, o, edges) for o in others):
            inv.ranked.remove((h, s))
            inv.ranked.insert(0, (h, s))
            return
    names = " and ".join(
        relation_of(h.cause) + (f".{h.column}" if h.column else "") for h, _ in tied[:3]
    )
    inv.tie = (
        f"{names} are tied at {best:.2f} and neither explains the other: query both over the "
        "window's rows to see which changed first"
    )


def _downstream(inv: Investigation) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for node, ups in inv.upstream.items():
        for up in ups:
            out.setdefault(up, set()).add(node)
    return out
