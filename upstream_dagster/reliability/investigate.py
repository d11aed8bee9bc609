"""The investigation: recall memory, walk lineage upstream one hop at a time, find the node
that is unhealthy while none of its own upstreams is, and state hypotheses that cite evidence.

Pure: everything it reads comes through a `Probe` (DataHub and the warehouse behind it, or a
recording of them), so a recorded investigation replays to the same conclusion.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable
from dataclasses import replace
from itertools import pairwise

from upstream_dagster.reliability import relevance
from upstream_dagster.reliability.candidates import candidates
from upstream_dagster.reliability.evidence import Finding, Hypothesis
from upstream_dagster.reliability.forensics import confirm
from upstream_dagster.reliability.grain import at_grain
from upstream_dagster.reliability.health import (
    NodeView,
    diagnose,
    not_rebuilt,
    observed,
)
from upstream_dagster.reliability.profiles import wrote_anew
from upstream_dagster.reliability.ranking import (
    CHANGED,
    COLUMN_CLASSES,
    DATA_CLASSES,
    PRIORITY,
    SCHEMA_CLASSES,
    score,
    settle_ties,
)
from upstream_dagster.reliability.walk import (
    BudgetExhausted,
    Investigation,
    Memory,
    Probe,
    Trigger,
    column_ancestors,
)
from upstream_dagster.spec.urns import relation_of

MAX_DEPTH = 12


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
        inv.views[urn] = view
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
    for urn, view in views.items():
        inv.findings[urn] += not_rebuilt(
            view, inv.trigger.window, inv.ledger, _upstream_runs(inv, views, urn)
        )
    return views


def _upstream_runs(inv: Investigation, views: dict[str, NodeView], urn: str) -> tuple[int, ...]:
    """The runs a model's last run is compared with: its upstreams' runs, or, for a model whose
    upstreams keep no run records (feeds, loaded by something else), the times its feeds' row
    counts moved after the model's last build. A model left as it is while its inputs did not
    change is what a build of what changed does (dbt's ``state:modified+``, Upstream's own
    refresh), rightly: other models rebuilt beside it say nothing about it (a skip read from
    them blamed an untouched model at 0.95 beside a feed's duplicated rows), and neither does
    an upstream's run that changed nothing (a snapshot: it reads the clock, so every refresh
    runs it; a blind case blamed the model built from it at 1.00)."""
    parents = [u for u in inv.upstream.get(urn, ()) if u in views]
    w, moved = inv.trigger.window, wrote_anew(views[urn], inv.trigger.window)
    ran = [(u, t) for u in parents if (t := views[u].last_run_ms) is not None]
    runs = tuple(t for u, t in ran if moved or wrote_anew(views[u], w))
    if runs or not parents:
        return runs
    since = views[urn].last_run_ms
    if since is None:
        return ()
    return tuple(
        b.at_ms
        for u in parents
        for a, b in pairwise(p for p in views[u].profiles if not p.partition)
        if a.rows != b.rows and b.at_ms > since
    )


def _is_trigger(inv: Investigation, f: Finding) -> bool:
    """Whether a finding is the failing check itself, as reported on this node (DataHub's dbt
    source keeps a relationships test as one assertion per table it reads)."""
    detail = dict(inv.ledger[f.evidence].detail)
    check = inv.trigger.check
    return detail.get("assertion") == check.assertion or (
        bool(check.description) and detail.get("check") == check.description
    )


def _reaching(cause: str, data: list[Finding], feeds: set[tuple[str, str]]) -> list[Finding]:
    """A node's findings less the column failures its column lineage carries to none of the
    checked columns, while another finding remains: a louder NULL burst on a column nothing
    checked reads must not name the node's failure over a shift in the column that feeds the
    check. Where lineage knows none of the node's columns, nothing is set aside."""
    if not any(node == cause for node, _ in feeds):
        return data
    kept = [
        f
        for f in data
        if f.failure_class not in COLUMN_CLASSES
        or not f.column
        or (cause, f.column.lower()) in feeds
    ]
    named = [f for f in kept if f.failure_class != "code_change"]
    # A code change is named by what it did to the data: set aside only for another failure.
    return kept if named else data


def _unshifted(inv: Investigation, data: list[Finding]) -> list[Finding]:
    """A node's findings less those of a day whose day column itself moved (its times shifted
    with as many rows): that day now holds other rows, so what changed on it (a code gone, a
    mean moved) is the shift seen from inside the day, not a failure of its own."""
    detail = {id(f): dict(inv.ledger[f.evidence].detail) for f in data}
    moved = {
        f"{f.column.lower()}="
        for f in data
        if f.failure_class == "value_shift" and f.column and "max_after" in detail[id(f)]
    }
    day = {id(f): str(detail[id(f)].get("partition", "")).lower() for f in data}
    return [f for f in data if not any(day[id(f)].startswith(m) for m in moved)]


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
    findings = [f for f in findings if not f.minor] or findings  # past a threshold first
    # A check's own failure (a freshness check says "stale") describes the symptom; what the
    # profile or the timeline recorded of the node says what happened to it.
    recorded = [f for f in findings if inv.ledger[f.evidence].kind != "assertion"]
    return min(recorded or findings, key=lambda f: PRIORITY.index(f.failure_class))


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
        column_ancestors(
            probe.column_edges(), (trigger.symptom, trigger.check.column), *trigger.input_columns
        )
        if trigger.check.column and use_columns
        else set()
    )
    causes, marked = candidates(inv, roots(inv))
    out = []
    for cause in causes:
        findings = inv.findings[cause]
        data = [f for f in findings if f.failure_class in DATA_CLASSES]
        own = all(_is_trigger(inv, f) for f in findings)
        if not data and (cause == trigger.symptom or own):
            # only the failing check itself (DataHub reports a relationships test on both of
            # its tables): nothing explains it
            continue
        code = any(f.failure_class == "code_change" for f in findings)
        data = _reaching(cause, _unshifted(inv, data), feeds)
        lead = _lead(inv, [f for f in data if f.failure_class != "code_change"] or data or findings)
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
            code_changed=code,
            derived=cause in marked,
        )
        if hyp.cites:  # a hypothesis citing nothing is dropped
            out.append(hyp)
    return out


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
    edges = probe.column_edges() if not warm else ()
    reach = relevance.reach(inv, edges) if edges else None
    drafts = hypotheses(inv, probe, memory, use_columns=not warm)
    drafts = [with_forensics(inv, h, probe, forensic_budget) for h in drafts[:4]] + drafts[4:]
    drafts = at_grain(inv, probe, drafts, edges, forensic_budget)
    inv.ranked = sorted(
        ((h, score(inv, h, feeds_known, 0.0, reach)) for h in drafts),
        key=lambda hs: (-hs[1].confidence, hs[0].cause),
    )
    settle_ties(inv, edges)
    return inv
