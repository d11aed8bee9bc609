"""The investigation: recall memory, walk lineage upstream one hop at a time, find the node
that is unhealthy while none of its own upstreams is, and state hypotheses that cite evidence.

Pure: everything it reads comes through a `Probe` (DataHub and the warehouse behind it, or a
recording of them), so a recorded investigation replays to the same conclusion.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TypeVar

from upstream_dagster.reliability.evidence import Finding, Hypothesis, Score
from upstream_dagster.reliability.forensics import confirm
from upstream_dagster.reliability.health import (
    NodeView,
    diagnose,
    not_rebuilt,
    observed,
)
from upstream_dagster.reliability.walk import (
    ROWS,
    BudgetExhausted,
    Investigation,
    Memory,
    Probe,
    Trigger,
)
from upstream_dagster.spec.urns import relation_of

T = TypeVar("T")
MAX_DEPTH = 12
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
    "value_shift",
    "failing_check",
)
DATA_CLASSES = set(PRIORITY) - {"failing_check"}
# Failures of one column's values: column lineage must connect them to the symptom's column.
COLUMN_CLASSES = {"rename", "column_removed", "type_change", "null_jump", "value_shift"}


def _downstream_path(inv: Investigation, cause: str) -> tuple[str, ...]:
    """Shortest path cause -> symptom over the walked lineage."""
    symptom = inv.trigger.symptom
    parents: dict[str, str | None] = {symptom: None}
    queue = deque([symptom])
    while queue:
        node = queue.popleft()
        if node == cause:
            break
        for up in inv.upstream.get(node, ()):
            if up not in parents:
                parents[up] = node
                queue.append(up)
    if cause not in parents:
        return (cause, symptom)
    path, cur = [cause], parents[cause]
    while cur is not None:
        path.append(cur)
        cur = parents[cur]
    return tuple(path)


def _observe(
    inv: Investigation, probe: Probe, hop: tuple[str, ...], with_runs: bool = True
) -> dict[str, NodeView]:
    views = probe.observe(hop, with_runs)
    for urn in hop:
        view = views.get(urn) or NodeView(urn, relation_of(urn))
        inv.findings[urn] = diagnose(view, inv.trigger.window, inv.ledger)
        if observed(view, inv.trigger.window):
            inv.observed.add(urn)
        if any(p.partition for p in view.profiles):
            inv.day_profiled.add(urn)
        inv.walked += 1
    return views


def walk(inv: Investigation, probe: Probe, start: Iterable[str]) -> dict[str, NodeView]:
    """Breadth-first upstream from ``start``, one hop per round of reads."""
    seen: set[str] = set()
    views: dict[str, NodeView] = {}
    hop = tuple(dict.fromkeys(start))
    depth = 0
    try:
        while hop and depth <= MAX_DEPTH:
            seen.update(hop)
            views.update(_observe(inv, probe, hop))
            nxt: list[str] = []
            for urn in hop:
                ups = probe.upstreams(urn)
                if urn == inv.trigger.symptom:
                    ups = tuple(dict.fromkeys((*ups, *inv.trigger.inputs)))
                inv.upstream[urn] = ups
                nxt += [u for u in ups if u not in seen]
            hop = tuple(dict.fromkeys(nxt))
            depth += 1
    except BudgetExhausted:
        inv.budget_note = (
            f"the DataHub read budget ran out after {probe.reads} reads, {depth} hops upstream"
        )
    # The build's own runs inside the window: what a model whose upstreams keep no run records
    # (feeds, loaded by something else) is compared with.
    built = tuple(
        t
        for v in views.values()
        if (t := v.last_run_ms) is not None and inv.trigger.window.holds(t)
    )
    for urn, view in views.items():
        parents = [u for u in inv.upstream.get(urn, ()) if u in views]
        runs = tuple(t for u in parents if (t := views[u].last_run_ms) is not None)
        inv.findings[urn] += not_rebuilt(
            view, inv.trigger.window, inv.ledger, runs if runs or not parents else built
        )
    return views


def _is_trigger(inv: Investigation, f: Finding) -> bool:
    """Whether a finding is the failing check itself, as reported on this node (DataHub's dbt
    source keeps a relationships test as one assertion per table it reads)."""
    detail = dict(inv.ledger[f.evidence].detail)
    check = inv.trigger.check
    return detail.get("assertion") == check.assertion or (
        bool(check.description) and detail.get("check") == check.description
    )


def _lead(inv: Investigation, findings: list[Finding]) -> Finding:
    """The finding that names the node's failure: the most specific class, except that rows
    leaving one day while the table keeps its count were moved, not lost: a column failure of
    the whole table (the day's column NULLed or retyped) explains them."""
    whole = [
        f
        for f in findings
        if f.failure_class in COLUMN_CLASSES
        and dict(inv.ledger[f.evidence].detail).get("partition", "table") == "table"
    ]
    table_volume = any(
        f.failure_class in ("volume_drop", "volume_jump")
        and dict(inv.ledger[f.evidence].detail).get("partition", "table") == "table"
        for f in findings
    )
    if whole and not table_volume:
        findings = [f for f in findings if f.failure_class not in ("volume_drop", "volume_jump")]
    # A check's own failure (a freshness check says "stale") describes the symptom; what the
    # profile or the timeline recorded of the node says what happened to it.
    recorded = [f for f in findings if inv.ledger[f.evidence].kind != "assertion"]
    return min(recorded or findings, key=lambda f: PRIORITY.index(f.failure_class))


def reachable(start: T, nexts: Mapping[T, Iterable[T]]) -> set[T]:
    """Every node reachable from ``start`` along ``nexts`` (``start`` itself only via a cycle)."""
    seen: set[T] = set()
    stack = [start]
    while stack:
        for nxt in nexts.get(stack.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def _column_ancestors(
    edges: tuple[tuple[tuple[str, str], tuple[str, str]], ...], *targets: tuple[str, str]
) -> set[tuple[str, str]]:
    """The upstream columns that feed any of ``targets``: through the column lineage, and
    through row lineage (a column deciding a model's rows feeds all of its columns)."""
    ups: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for up, down in edges:
        ups.setdefault((down[0], down[1].lower()), set()).add((up[0], up[1].lower()))
    seen: set[tuple[str, str]] = set()
    stack = [(t[0], t[1].lower()) for t in targets]
    while stack:
        node = stack.pop()
        for up in ups.get(node, set()) | ups.get((node[0], ROWS), set()):
            if up not in seen:
                seen.add(up)
                stack.append(up)
    return seen


def _downstream_of_trouble(inv: Investigation, urn: str) -> bool:
    """Whether an unhealthy node lies upstream of ``urn``, directly or through nodes nothing was
    observed on (no evidence is not health)."""
    bad, seen = inv.unhealthy, set()
    stack = list(inv.upstream.get(urn, ()))
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if node in bad:
            return True
        if node not in inv.observed:
            stack.extend(inv.upstream.get(node, ()))
    return False


def roots(inv: Investigation) -> list[str]:
    """Unhealthy nodes with nothing unhealthy upstream of them."""
    return sorted(u for u in inv.unhealthy if not _downstream_of_trouble(inv, u))


def hypotheses(
    inv: Investigation, probe: Probe, memory: Memory | None, use_columns: bool = True
) -> list[Hypothesis]:
    trigger = inv.trigger
    feeds = (
        _column_ancestors(
            probe.column_edges(), (trigger.symptom, trigger.check.column), *trigger.input_columns
        )
        if trigger.check.column and use_columns
        else set()
    )
    out = []
    for cause in roots(inv):
        findings = inv.findings[cause]
        data = [f for f in findings if f.failure_class in DATA_CLASSES]
        own = all(_is_trigger(inv, f) for f in findings)
        if not data and (cause == trigger.symptom or own):
            # only the failing check itself (DataHub reports a relationships test on both of
            # its tables): nothing explains it
            continue
        lead = _lead(inv, data or findings)
        path = _downstream_path(inv, cause)
        cites = [f.evidence for f in findings]
        for node in path[1:]:
            cites += [f.evidence for f in inv.findings.get(node, [])]
        if len(path) > 1:
            names = " -> ".join(relation_of(u) for u in path)
            cites.append(inv.ledger.add("lineage", cause, f"lineage before the symptom: {names}"))
        named = _named_in_error(inv, lead) if cause != trigger.symptom else None
        if named is not None:
            cites.append(named)
        if lead.column and (cause, lead.column.lower()) in feeds:
            cites.append(
                inv.ledger.add(
                    "lineage",
                    cause,
                    f"column {relation_of(cause)}.{lead.column} feeds "
                    f"{relation_of(trigger.symptom)}.{trigger.check.column}",
                    column=lead.column,
                )
            )
        hyp = Hypothesis(
            cause,
            lead.column,
            lead.failure_class,
            tuple(sorted(set(cites))),
            path,
            lead.renamed_to,
            from_memory=memory is not None
            and memory.cause == cause
            and memory.failure_class == lead.failure_class,
        )
        if hyp.cites:  # a hypothesis citing nothing is dropped
            out.append(hyp)
    return out


SCHEMA_CLASSES = {"rename", "column_removed", "type_change"}


def _named_in_error(inv: Investigation, lead: Finding) -> int | None:
    """Evidence that the symptom's own failure message (a build error, say) names the column
    an upstream schema change took away: the error and the change are the same event."""
    if lead.failure_class not in SCHEMA_CLASSES or not lead.column:
        return None
    word = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(lead.column)}(?![A-Za-z0-9_])", re.I)
    symptom = inv.trigger.symptom
    for e in list(inv.ledger.items):
        message = dict(e.detail).get("message", "")
        if e.kind == "assertion" and e.subject == symptom and word.search(message):
            return inv.ledger.add(
                "run_record",
                lead.subject,
                f"the failure of {relation_of(symptom)} names {lead.column}, the column "
                f"{relation_of(lead.subject)} {CHANGED[lead.failure_class]}",
                column=lead.column,
                at_ms=e.at_ms,
            )
    return None


CHANGED = {"rename": "renamed", "column_removed": "removed", "type_change": "retyped"}


def _day_finding(inv: Investigation, hyp: Hypothesis) -> bool:
    for f in inv.findings.get(hyp.cause, []):
        if f.failure_class == hyp.failure_class and f.column == hyp.column:
            return dict(inv.ledger[f.evidence].detail).get("partition", "table") != "table"
    return False


def score(inv: Investigation, hyp: Hypothesis, feeds_known: bool, simulation: float) -> Score:
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
        f.at_ms for f in inv.findings.get(hyp.cause, []) if f.failure_class == hyp.failure_class
    ]
    temporal = 1.0 if any(inv.trigger.window.holds(t) for t in cause_times) else 0.0
    diversity = min(1.0, len(kinds - {"lineage", "memory"}) / 3)
    # Does the symptom show the failure in its own data (a profile or a run record), or does
    # its failure message name the cause's column? A check that failed on data that did not
    # change (a timeout) shows neither.
    shows = any(
        f.failure_class in DATA_CLASSES - SCHEMA_CLASSES
        and inv.ledger[f.evidence].kind in ("profile", "run_record")
        for f in inv.findings.get(inv.trigger.symptom, [])
    )
    named = any(inv.ledger[i].kind == "run_record" and inv.ledger[i].column for i in hyp.cites)
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
    )


def with_forensics(inv: Investigation, hyp: Hypothesis, probe: Probe, budget: int) -> Hypothesis:
    """Confirm the lead finding in the warehouse with one guarded query."""
    if inv.forensic_queries >= budget:
        return hyp
    inv.forensic_queries += 1
    cites = confirm(inv, hyp, probe)
    return replace(hyp, cites=tuple(sorted({*hyp.cites, *cites})))


def _recall(inv: Investigation, probe: Probe, memory: Memory) -> bool:
    """Warm start: observe only the symptom and the remembered cause (and, for a skipped
    build, the cause's upstreams). True when the remembered failure shows again."""
    symptom = inv.trigger.symptom
    try:
        hop: tuple[str, ...] = (symptom, memory.cause)
        if memory.failure_class == "not_rebuilt":
            inv.upstream[memory.cause] = probe.upstreams(memory.cause)
            hop += inv.upstream[memory.cause]
        views = _observe(
            inv, probe, tuple(dict.fromkeys(hop)), memory.failure_class == "not_rebuilt"
        )
    except BudgetExhausted:
        return False
    inv.upstream.setdefault(memory.cause, ())
    if memory.cause != symptom:  # the guard at a feed fails on the cause itself
        inv.upstream[symptom] = (memory.cause,)
    runs = (
        tuple(t for u in inv.upstream[memory.cause] if (t := views[u].last_run_ms) is not None)
        if memory.failure_class == "not_rebuilt"
        else ()
    )
    if memory.cause in views:
        inv.findings[memory.cause] += not_rebuilt(
            views[memory.cause], inv.trigger.window, inv.ledger, runs
        )
    return any(
        f.failure_class == memory.failure_class and f.column == memory.column
        for f in inv.findings.get(memory.cause, [])
    )


def investigate(
    trigger: Trigger,
    probe: Probe,
    memory: Memory | None = None,
    forensic_budget: int = 20,
) -> Investigation:
    inv = Investigation(trigger)
    if memory is not None:
        inv.ledger.add(
            "memory",
            memory.cause,
            f"an earlier incident on {relation_of(trigger.symptom)} was caused by "
            f"{memory.failure_class} of {relation_of(memory.cause)}"
            + (f".{memory.column}" if memory.column else ""),
            column=memory.column,
        )
        inv.memory_used = True
        if not _recall(inv, probe, memory):
            inv.ledger.add(
                "memory",
                memory.cause,
                f"memory contradicted: {relation_of(memory.cause)} shows no "
                f"{memory.failure_class} now; walking lineage as if nothing were remembered",
            )
            memory = None
            inv.findings.clear()
            inv.upstream.clear()
            walk(inv, probe, [trigger.symptom])
    else:
        walk(inv, probe, [trigger.symptom])
    # Warm runs skip the column lineage read: the remembered cause already names its column.
    warm = memory is not None
    feeds_known = not warm and bool(trigger.check.column) and bool(probe.column_edges())
    drafts = hypotheses(inv, probe, memory, use_columns=not warm)
    drafts = [with_forensics(inv, h, probe, forensic_budget) for h in drafts[:3]] + drafts[3:]
    inv.ranked = sorted(
        ((h, score(inv, h, feeds_known, 0.0)) for h in drafts),
        key=lambda hs: (-hs[1].confidence, hs[0].cause),
    )
    settle_ties(inv, probe.column_edges() if not warm else ())
    return inv


def _explains(
    up: Hypothesis, down: Hypothesis, edges: tuple[tuple[tuple[str, str], tuple[str, str]], ...]
) -> bool:
    """Whether ``up``'s failure accounts for ``down``'s: lost or late rows upstream account for
    anything downstream; a column's failure accounts for a column it feeds (or for the rows,
    when it decides them)."""
    if up.column is None:
        return True
    target = (down.cause, down.column or ROWS)
    return (up.cause, up.column.lower()) in _column_ancestors(edges, target)


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
