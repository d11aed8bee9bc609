"""The steps of an investigation, each called by one incident asset.

triage -> evidence -> simulation -> verdict. Each step takes the graph it reads (and the
warehouse, the dbt project), counts its reads, keeps what it read for the incident's record, and
hands plain records to the next. `triage_on`, `gather_on` and `verdict_step` are also what
replaying a record runs, on the recorded reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from dataclasses import replace as copy
from typing import Any

from upstream_dagster.datahub.aspects import BUILD_PROPERTY
from upstream_dagster.datahub.incidents import memory_of, trigger_for
from upstream_dagster.datahub.probe import GraphProbe
from upstream_dagster.datahub.protocol import MetadataGraph
from upstream_dagster.datahub.recording import RecordingGraph
from upstream_dagster.datahub.values import property_values
from upstream_dagster.narrator import PR_SYSTEM, RCA_SYSTEM, Narrator
from upstream_dagster.reliability.incident_risk import incident_risk
from upstream_dagster.reliability.investigate import investigate
from upstream_dagster.reliability.remediation import MACRO_PATH, Remedy, remedy
from upstream_dagster.reliability.rules import judge
from upstream_dagster.reliability.verdict import (
    Sim,
    Verdict,
    flaky,
    rescore,
    summary_sentences,
    unsettled,
)
from upstream_dagster.reliability.walk import Investigation, Memory, Trigger
from upstream_dagster.services.incident_record import ForensicRecorder
from upstream_dagster.services.observe import measure_urn
from upstream_dagster.spec.models import EstateSpec
from upstream_dagster.spec.urns import relation_of, to_urns
from upstream_dagster.warehouse.dbt_project import DbtProject
from upstream_dagster.warehouse.duckdb_warehouse import Warehouse
from upstream_dagster.warehouse.sandbox import Recheck, simulate


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
    build_check: bool = False  # the failing assertion is a model's build (a loud failure)


def triage(graph: MetadataGraph, spec: EstateSpec, key: str) -> Triage:
    """Triage on ``graph``, keeping every read it made (the incident's record)."""
    recorder = RecordingGraph(graph)
    return replace(triage_on(recorder, spec, key), record=tuple(recorder.reads))


def triage_on(graph: MetadataGraph, spec: EstateSpec, key: str) -> Triage:
    opened = trigger_for(graph, key)  # memory comes with the symptom's own aspects
    reads = graph.counter.calls
    facts = opened.facts
    critical_urns = set(to_urns("domains", spec.policies.risk.critical_domains)) | set(
        to_urns("terms", spec.policies.risk.critical_terms)
    )
    have = set((facts.get("domains") or {}).get("domains", [])) | {
        t["urn"] for t in (facts.get("glossaryTerms") or {}).get("terms", [])
    }
    modes = property_values(facts.get("structuredProperties")).get(
        "urn:li:structuredProperty:knownFailureModes", []
    )
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
        build_check=bool(opened.properties.get(BUILD_PROPERTY)),
    )


@dataclass
class Gathered:
    investigation: Investigation
    reads: int
    consumers: tuple[str, ...] | None
    queries: tuple[tuple[str, str], ...]
    record: tuple[dict[str, Any], ...] = ()  # every DataHub read the walk made, and its answer
    forensic: tuple[dict[str, Any], ...] = ()  # every forensic query, and its rows


Forensic = Callable[[str, set[str]], tuple[str | None, list[Any], str]]


def gather(
    graph: MetadataGraph, warehouse: Warehouse | None, spec: EstateSpec, t: Triage
) -> Gathered:
    """The lineage walk on ``graph`` with forensic SQL on ``warehouse`` (none: not run),
    keeping every read and every query it made (the incident's record)."""
    recorder = RecordingGraph(graph)
    budgets = spec.policies.reliability.budgets
    if warehouse is not None:  # each query bounded as estate.yaml's budgets say
        warehouse = replace(
            warehouse, query_seconds=budgets.query_seconds, query_memory_mb=budgets.query_memory_mb
        )
    forensic = ForensicRecorder(warehouse.forensic if warehouse else _no_warehouse)
    g = gather_on(recorder, spec, t, forensic, warehouse.relation if warehouse else relation_of)
    return replace(g, record=tuple(recorder.reads), forensic=tuple(forensic.entries))


def _no_warehouse(sql: str, relations: set[str]) -> tuple[str | None, list[Any], str]:
    return None, [], "no warehouse is configured for forensic queries"


def gather_on(
    graph: MetadataGraph,
    spec: EstateSpec,
    t: Triage,
    forensic: Forensic,
    relation: Callable[[str], str] = relation_of,
) -> Gathered:
    """The walk on ``graph``; ``relation`` names a dataset's table in the warehouse."""
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
        relation=relation,
    )
    inv = investigate(t.trigger, probe, t.memory, budgets.forensic_queries)
    consumers: tuple[str, ...] | None = None  # not read on a warm run
    if inv.ranked and not inv.memory_used:
        consumers = probe.consumers(inv.ranked[0][0].cause)
    return Gathered(inv, graph.counter.calls, consumers, tuple(probe.queries))


# -- remedy and simulation ----------------------------------------------------------------------
def build_remedy(project: DbtProject, inv: Investigation) -> Remedy:
    if not inv.ranked:
        return remedy("failing_check", {}, None, None, "", ())
    h, score = inv.ranked[0]
    if score.coincidence:  # nothing to fix: the sandbox only re-runs the check (the control)
        return remedy("coincidence", {}, None, None, "", ())
    manifest = project.manifest()
    node = project.node_of(relation_of(h.cause))
    if node is None:
        return remedy(h.failure_class, {}, h.column, h.renamed_to, "", ())
    uid = node["unique_id"]
    if h.code_changed and node["resource_type"] == "model":
        path = str(node["original_file_path"])
        tracked = project.source / path
        before = tracked.read_text() if tracked.exists() else ""
        now = (project.project_dir / path).read_text()
        return remedy(h.failure_class, {}, None, None, "", (f"{node['name']}+",),
                      revert=(path, now, before or now))  # fmt: skip
    if node["resource_type"] == "source":
        expr = f"source('{node['source_name']}', '{node['name']}')"
    else:
        expr = f"ref('{node['name']}')"
    children = [
        manifest["nodes"][c] for c in manifest["child_map"].get(uid, []) if c.startswith("model.")
    ]
    files = {
        c["original_file_path"]: (project.project_dir / c["original_file_path"]).read_text()
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
        macro_exists=(project.project_dir / MACRO_PATH).exists(),
    )


def baseline(graph: MetadataGraph, t: Triage) -> float | None:
    """The failing check's last passing observation (what a NULL-share jump is measured from)."""
    runs = graph.assertion_runs([t.trigger.symptom], None, latest_only=False)
    passed = [
        r
        for r in runs
        if r.assertion_urn == t.trigger.check.assertion
        and r.result == "SUCCESS"
        and r.timestamp_ms < t.trigger.window.symptom_ms
    ]
    observed = dict(passed[-1].native).get("observed") if passed else None
    return float(observed) if observed else None


def _test_name(unique_id: str) -> str:
    return unique_id.split(".")[2] if unique_id.count(".") >= 2 else unique_id


def recheck(spec: EstateSpec, t: Triage, base: float | None) -> Recheck:
    """A function re-running the failing check against a sandbox's warehouse and dbt run;
    ``base`` is the check's last passing observation (`baseline`). ``fresh``: nothing was built
    in the sandbox yet, so a dbt test or a model's build runs itself first."""

    def run(box: DbtProject, fresh: bool) -> tuple[bool, str]:
        if t.build_check:
            node = box.node_of(relation_of(t.trigger.symptom))
            if fresh and node is not None:
                box.run("build", "--select", str(node["name"]))
            status = box.results().get(str(node["unique_id"])) if node else None
            if status is None:
                return False, f"{relation_of(t.trigger.symptom)} was not built in the sandbox"
            return status == "success", f"dbt build of the model: {status} in the sandbox"
        if t.dbt_test:
            if fresh:
                box.run("test", "--select", _test_name(t.dbt_test))
            status = box.results().get(t.dbt_test)
            if status is None:
                return False, f"{t.dbt_test} did not run in the sandbox"
            return status == "pass", f"dbt test {status} in the sandbox"
        monitor = next((m for m in spec.monitors if m.name == t.monitor), None)
        if monitor is None:
            return False, "the failing assertion is neither a dbt test nor an estate.yaml monitor"
        prev = base if monitor.rule == "null_rate_jump" else None
        sandbox = Warehouse(box.warehouse, manifest=box.manifest_path)
        with sandbox.connect() as con:
            table = sandbox.relation(t.trigger.symptom)
            obs = measure_urn(con, monitor, table, t.trigger.check.column, prev)
        verdict = judge(monitor.rule, obs, monitor.threshold)
        return verdict.passed, f"{monitor.name} in the sandbox: {verdict.message}"

    return run


def toward_check(project: DbtProject, fix: Remedy, t: Triage) -> Remedy:
    """The fix's rebuild cut, for the sandbox, to what lies between each node it rebuilds and
    the failing check (dbt's intersection ``a+,+b``): the check reads only its own ancestors,
    so nothing else needs building to see it turn green. Approved, the fix still rebuilds
    everything below what it changed."""
    if not fix.rebuild:
        return fix
    if t.dbt_test:  # a test's ancestors include a relationships test's other table
        target = _test_name(t.dbt_test)
    else:
        node = project.node_of(relation_of(t.trigger.symptom))
        if node is None or node["resource_type"] not in ("model", "seed"):
            return fix
        target = str(node["name"])
    return replace(fix, rebuild=tuple(f"{s},+{target}" for s in fix.rebuild))


def simulate_step(
    graph: MetadataGraph, project: DbtProject, spec: EstateSpec, t: Triage, g: Gathered
) -> tuple[Remedy, Sim]:
    """The fix in a sandbox, with its control: the check re-run without it."""
    fix = build_remedy(project, g.investigation)
    sim = simulate(project, toward_check(project, fix, t), recheck(spec, t, baseline(graph, t)))
    message = sim.message + (f" ({sim.seconds}s)" if sim.ran else "")
    if not g.investigation.ranked and not sim.ran:
        message = "no hypothesis to simulate"
    return fix, Sim(sim.ran, sim.passed, message, sim.control_ran, sim.control_passed,
                    sim.control_message)  # fmt: skip


def verdict_step(
    spec: EstateSpec,
    t: Triage,
    g: Gathered,
    fix: Remedy,
    sim: Sim,
    narrator: Narrator | None = None,
) -> Verdict:
    inv = g.investigation
    ranked = rescore(inv, sim)
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
        unsettled=unsettled(inv, ranked),
        flaky=flaky(inv, sim),
        relevance={k: r.why for k, r in inv.relevance.items()},
    )
    return narrate(v, narrator) if narrator is not None and narrator.enabled else v


def narrate(v: Verdict, narrator: Narrator) -> Verdict:
    """The narrator's prose for the RCA summary and the pull request, over the template's own
    cited sentences. It never changes the conclusion, the confidence or the digest."""
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
