"""The steps of an investigation, each called by one incident asset (and by the CLI).

triage -> evidence -> simulation -> verdict. Each step opens DataHub, counts its reads, and
hands plain records to the next.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from upstream_dagster.datahub.incidents import trigger_for
from upstream_dagster.reliability.investigate import Investigation, Memory, Trigger, investigate
from upstream_dagster.reliability.remediation import MACRO_PATH, Remedy, remedy
from upstream_dagster.settings import Settings
from upstream_dagster.spec.models import EstateSpec
from upstream_dagster.spec.urns import to_urns


@dataclass(frozen=True)
class Triage:
    key: str
    trigger: Trigger
    memory: Memory | None
    owners: tuple[str, ...]
    critical: tuple[str, ...]
    remembered: int
    monitor: str | None  # the estate.yaml monitor behind the failing assertion
    dbt_test: str | None  # or the dbt test's unique id
    reads: int
    history: dict[str, Any]  # the symptom's schema, profile and siblings history
    record: tuple[dict[str, Any], ...] = ()  # every DataHub read triage made, and its answer


def triage(settings: Settings, spec: EstateSpec, key: str) -> Triage:
    from upstream_dagster.datahub import open_graph
    from upstream_dagster.datahub.recording import RecordingGraph

    graph = RecordingGraph(open_graph(settings))
    try:
        return replace(triage_on(graph, spec, key), record=tuple(graph.reads))
    finally:
        graph.close()


def triage_on(graph: Any, spec: EstateSpec, key: str) -> Triage:
    from upstream_dagster.datahub.incidents import memory_of

    opened = trigger_for(graph, key)  # memory comes with the symptom's own aspects
    reads = graph.counter.calls
    facts = opened.facts
    critical_urns = set(to_urns("domains", spec.policies.risk.critical_domains)) | set(
        to_urns("terms", spec.policies.risk.critical_terms)
    )
    have = set((facts.get("domains") or {}).get("domains", [])) | {
        t["urn"] for t in (facts.get("glossaryTerms") or {}).get("terms", [])
    }
    modes = _property(facts, "urn:li:structuredProperty:knownFailureModes")
    return Triage(
        key,
        opened.trigger,
        memory_of(facts),
        # one person or group per entry, though DataHub may list them under several types
        tuple(dict.fromkeys(o["owner"] for o in (facts.get("ownership") or {}).get("owners", []))),
        tuple(sorted(have & critical_urns)),
        len(modes),
        opened.properties.get("upstream_monitor"),
        opened.properties.get("dbt_unique_id"),
        reads,
        opened.history,
    )


def _property(facts: dict[str, Any], urn: str) -> list[str]:
    for p in (facts.get("structuredProperties") or {}).get("properties", []):
        if p.get("propertyUrn") == urn:
            return [str(next(iter(v.values()))) for v in p.get("values", [])]
    return []


@dataclass
class Gathered:
    investigation: Investigation
    reads: int
    consumers: tuple[str, ...] | None
    queries: tuple[tuple[str, str], ...]
    record: tuple[dict[str, Any], ...] = ()  # every DataHub read the walk made, and its answer
    forensic: tuple[dict[str, Any], ...] = ()  # every forensic query, and its rows


Forensic = Callable[[str, set[str]], tuple[str | None, list[Any], str]]


def gather(settings: Settings, spec: EstateSpec, t: Triage) -> Gathered:
    from upstream_dagster import warehouse
    from upstream_dagster.datahub import open_graph
    from upstream_dagster.datahub.recording import RecordingGraph
    from upstream_dagster.records import ForensicRecorder

    graph = RecordingGraph(open_graph(settings))
    forensic = ForensicRecorder(lambda sql, rel: warehouse.forensic(settings.warehouse, sql, rel))
    try:
        g = gather_on(graph, spec, t, forensic)
    finally:
        graph.close()
    return replace(g, record=tuple(graph.reads), forensic=tuple(forensic.entries))


def gather_on(graph: Any, spec: EstateSpec, t: Triage, forensic: Forensic) -> Gathered:
    from upstream_dagster.datahub.probe import GraphProbe

    budgets = spec.policies.reliability.budgets
    w = t.trigger.window
    probe = GraphProbe(
        graph,
        w,
        budgets.datahub_reads - t.reads,
        forensic,
        # lineage as it stood when the check last passed; a check that never passed (a new
        # assertion, an estate without run history) gets the lineage at the failure instead
        # of the empty graph of time zero
        w.last_good_ms or w.symptom_ms,
        seed={t.trigger.symptom: t.history},
    )
    inv = investigate(t.trigger, probe, t.memory, budgets.forensic_queries)
    consumers: tuple[str, ...] | None = None  # not read on a warm run
    if inv.ranked and not inv.memory_used:
        consumers = probe.consumers(inv.ranked[0][0].cause)
    return Gathered(inv, graph.counter.calls, consumers, tuple(probe.queries))


# -- remedy and simulation ----------------------------------------------------------------------
def _manifest(settings: Settings) -> dict[str, Any]:
    from upstream_dagster.demo.deploy import manifest_path

    data: dict[str, Any] = json.loads(manifest_path(settings).read_text())
    return data


def _node_of(manifest: dict[str, Any], urn: str) -> dict[str, Any] | None:
    from upstream_dagster.reliability.investigate import relation_of

    table = relation_of(urn)
    for props in [*manifest["nodes"].values(), *manifest["sources"].values()]:
        if props["resource_type"] in ("model", "source"):
            name = props.get("alias") or props.get("identifier") or props["name"]
            if f"{props['schema']}.{name}".lower() == table:
                return props
    return None


def build_remedy(settings: Settings, inv: Investigation) -> Remedy:
    if not inv.ranked:
        return remedy("failing_check", {}, None, None, "", ())
    h = inv.ranked[0][0]
    manifest = _manifest(settings)
    node = _node_of(manifest, h.cause)
    if node is None:
        return remedy(h.failure_class, {}, h.column, h.renamed_to, "", ())
    uid = node["unique_id"]
    if node["resource_type"] == "source":
        expr = f"source('{node['source_name']}', '{node['name']}')"
    else:
        expr = f"ref('{node['name']}')"
    children = [
        manifest["nodes"][c] for c in manifest["child_map"].get(uid, []) if c.startswith("model.")
    ]
    files = {
        c["original_file_path"]: (settings.dbt_project_dir / c["original_file_path"]).read_text()
        for c in children
    }
    if h.failure_class == "not_rebuilt":
        rebuild: tuple[str, ...] = (f"{node['name']}+",)
    else:
        rebuild = tuple(sorted(f"{c['name']}+" for c in children))
    return remedy(
        h.failure_class,
        files,
        h.column,
        h.renamed_to,
        expr,
        rebuild,
        macro_exists=(settings.dbt_project_dir / MACRO_PATH).exists(),
    )


def baseline(settings: Settings, t: Triage) -> float | None:
    """The failing check's last passing observation (what a NULL-share jump is measured from)."""
    from upstream_dagster.datahub import open_graph

    graph = open_graph(settings)
    try:
        runs = graph.assertion_runs([t.trigger.symptom], None, latest_only=False)
    finally:
        graph.close()
    passed = [
        r
        for r in runs
        if r.assertion_urn == t.trigger.check.assertion
        and r.result == "SUCCESS"
        and r.timestamp_ms < t.trigger.window.symptom_ms
    ]
    observed = dict(passed[-1].native).get("observed") if passed else None
    return float(observed) if observed else None


def recheck(settings: Settings, spec: EstateSpec, t: Triage) -> Any:
    """A function re-running the failing check against a sandbox's warehouse and dbt run."""
    from upstream_dagster import warehouse
    from upstream_dagster.defs.monitors import measure_node
    from upstream_dagster.reliability.monitors import judge
    from upstream_dagster.sandbox import dbt_results

    def run(box: Settings) -> tuple[bool, str]:
        if t.dbt_test:
            status = dbt_results(box.dbt_project_dir).get(t.dbt_test)
            if status is None:
                return False, f"{t.dbt_test} did not run in the sandbox"
            return status == "pass", f"dbt test {status} in the sandbox"
        monitor = next((m for m in spec.monitors if m.name == t.monitor), None)
        if monitor is None:
            return False, "the failing assertion is neither a dbt test nor an estate.yaml monitor"
        base = baseline(settings, t) if monitor.rule == "null_rate_jump" else None
        with warehouse.connect(box.warehouse) as con:
            obs = measure_node(con, monitor, t.trigger.symptom, t.trigger.check.column, base)
        verdict = judge(monitor.rule, obs, monitor.threshold)
        return verdict.passed, f"{monitor.name} in the sandbox: {verdict.message}"

    return run


def simulate_step(
    settings: Settings, spec: EstateSpec, t: Triage, g: Gathered
) -> tuple[Remedy, tuple[bool, bool, str]]:
    from upstream_dagster.sandbox import simulate

    fix = build_remedy(settings, g.investigation)
    if not g.investigation.ranked:
        return fix, (False, False, "no hypothesis to simulate")
    sim = simulate(settings, fix, recheck(settings, spec, t))
    message = sim.message + (f" ({sim.seconds}s)" if sim.ran else "")
    return fix, (sim.ran, sim.passed, message)


def verdict_step(
    spec: EstateSpec,
    t: Triage,
    g: Gathered,
    fix: Remedy,
    sim: tuple[bool, bool, str],
    narrator: Any = None,
) -> Any:
    from upstream_dagster.reliability.risk import incident_risk
    from upstream_dagster.reliability.verdict import Verdict, rescore

    inv = g.investigation
    ranked = rescore(inv, {0: 1.0 if sim[0] and sim[1] else 0.0})
    budgets = spec.policies.reliability.budgets
    confidence = ranked[0][1].confidence if ranked else 0.0
    hops = len(ranked[0][0].path) - 1 if ranked else 0
    risk = incident_risk(
        list(t.critical),
        t.remembered,
        None if g.consumers is None else len(g.consumers),
        hops,
        fix.action,
        confidence,
    )
    notes = (inv.budget_note,) if inv.budget_note else ()
    v = Verdict(
        key=t.key,
        symptom=t.trigger.symptom,
        check=t.trigger.check,
        window=t.trigger.window,
        ledger=tuple(inv.ledger.items),
        ranked=ranked,
        min_confidence=spec.policies.reliability.min_confidence_to_remediate,
        remedy=fix,
        simulation=sim,
        risk=risk,
        reads=t.reads + g.reads,
        budgets=(
            ("datahub_reads", t.reads + g.reads, budgets.datahub_reads),
            ("forensic_queries", inv.forensic_queries, budgets.forensic_queries),
            ("model_calls", 0, budgets.model_calls),
        ),
        owners=t.owners,
        consumers=g.consumers or (),
        memory_used=inv.memory_used,
        notes=notes,
    )
    return narrate(v, narrator) if narrator is not None and narrator.enabled else v


def narrate(v: Any, narrator: Any) -> Any:
    """The narrator's prose for the RCA summary and the pull request, over the template's own
    cited sentences. It never changes the conclusion, the confidence or the digest."""
    from dataclasses import replace as copy

    from upstream_dagster.narrator import PR_SYSTEM, RCA_SYSTEM
    from upstream_dagster.reliability.verdict import summary_sentences

    facts = summary_sentences(v)
    summary = narrator.grounded(f"RCA of {v.key}", RCA_SYSTEM, " ".join(facts))
    pull_request = None
    if v.remedy.diff and v.top is not None:
        change = f"The change: {v.remedy.summary} {facts[1].rsplit(' ', 1)[-1]}"
        pull_request = narrator.grounded(
            f"pull request of {v.key}", PR_SYSTEM, " ".join([*facts, change])
        )
    budgets = tuple(
        (name, narrator.used if name == "model_calls" else used, limit)
        for name, used, limit in v.budgets
    )
    notes = (*v.notes, *(f"narrator: {n}" for n in narrator.skipped))
    return copy(
        v,
        summary=summary or "",
        pull_request=pull_request or "",
        budgets=budgets,
        notes=notes,
    )
