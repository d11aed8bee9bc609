"""`upstream detect`: how many realistic faults would the estate's checks catch?

For each tier of estate.yaml that sets min_fault_detection, faults are drawn for a seed
(`detect_draw`) over the tier's assets and their feeds, and tried one at a time in a sandbox:
a throwaway copy of the deployed dbt project and the warehouse (`warehouse.sandbox`), built
clean once. Each fault starts from that clean copy: a fault on a feed or a seed changes its
rows, a fault on a model changes its code (`evaluation.faults`, as the scenarios do); then
what is downstream is built with its dbt tests, and the estate's other checks run
(`detect_checks`). A check catches a fault when it fails after it and passed on the clean copy.
The team's warehouse and project are never touched. The result is kept in the state folder,
where the dial reads it (`conformance.detection`); the time budget bounds the run, and a fault
left untried is reported as such, never as caught.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from upstream_dagster import clock
from upstream_dagster.conformance.context import FaultTrial
from upstream_dagster.conformance.detection import Detection, save
from upstream_dagster.datahub import Target, connected
from upstream_dagster.datahub.readpath import read_context
from upstream_dagster.datahub.signals import guard_assertions, template_assertions
from upstream_dagster.datahub.tier_search import resolve_scope
from upstream_dagster.errors import UpstreamError
from upstream_dagster.evaluation.detect_checks import (
    Failing,
    Watch,
    candidates,
    dbt_failures,
    failing_templates,
    freshness_failures,
)
from upstream_dagster.evaluation.detect_draw import Planned, draw, targets, tier_assets
from upstream_dagster.evaluation.estate_model import read_estate
from upstream_dagster.evaluation.faults import apply_faults, model_sql
from upstream_dagster.evaluation.scenario import Fault
from upstream_dagster.services.observe import manifest_nodes, monitored
from upstream_dagster.settings import Settings
from upstream_dagster.spec.loader import load_estate
from upstream_dagster.spec.models import EstateSpec
from upstream_dagster.spec.urns import relation_of, short
from upstream_dagster.warehouse import duckdb_warehouse as wh
from upstream_dagster.warehouse.built_state import dbt_select
from upstream_dagster.warehouse.dbt_project import DbtProject
from upstream_dagster.warehouse.sandbox import sandbox_copy

Say = Callable[[str], None]
# the kinds that can move a source's newest load time, which dbt source freshness reads
_FRESHNESS_KINDS = ("stale", "late_rows", "delete_rows", "shift_time")


def _quiet(_: str) -> None:
    return None


class Bench:
    """One sandbox, built clean once; every fault starts again from that clean copy."""

    def __init__(self, box: DbtProject, spec: EstateSpec, watch: Watch, folder: Path) -> None:
        self.box, self.spec, self.watch = box, spec, watch
        self.clean = folder / "clean.duckdb"
        self.manifest: dict[str, Any] = {}
        self.clean_dbt: Failing = frozenset()
        self.clean_watch: Failing = frozenset()
        self.clean_fresh: dict[str, Failing] = {}
        self.templates: dict[tuple[str, float | None], tuple[str, ...]] = {}

    def _dbt(self, *args: str) -> None:
        for name in ("run_results.json", "sources.json"):  # never read a previous command's
            (self.box.project_dir / "target" / name).unlink(missing_ok=True)
        self.box.run(*args)

    def prepare(self) -> None:
        """The whole project built in the sandbox as it stands: what fails already cannot
        catch a fault, and each monitor's observation is the previous run's."""
        self._dbt("build")
        self.manifest = self.box.manifest()
        if not (self.box.project_dir / "target" / "run_results.json").exists():
            raise UpstreamError(
                "dbt could not build the sandbox copy of the estate",
                "run `upstream build` (or `make demo`) and fix what it reports first",
            )
        self.clean_dbt = dbt_failures(self.box.project_dir, self.manifest)
        shutil.copy2(self.box.warehouse, self.clean)
        self.watch = self.watch.observed(self.box.warehouse)
        self.clean_watch = self.watch.failing(self.box.warehouse)

    def _freshness(self, node: dict[str, Any]) -> Failing:
        fresh = node.get("freshness") or {}
        if not any((fresh.get(k) or {}).get("count") for k in ("warn_after", "error_after")):
            return frozenset()
        select = f"source:{node['source_name']}.{node['name']}"
        self._dbt("source", "freshness", "--select", select)
        return freshness_failures(self.box.project_dir)

    def _clean_freshness(self, node: dict[str, Any]) -> Failing:
        uid = str(node["unique_id"])
        if uid not in self.clean_fresh:
            shutil.copy2(self.clean, self.box.warehouse)
            self.clean_fresh[uid] = self._freshness(node)
        return self.clean_fresh[uid]

    def _break(self, fault: Fault, node: dict[str, Any] | None, saved: dict[Path, str]) -> None:
        budgets = self.spec.policies.reliability.budgets
        if node is not None and node["resource_type"] == "model" and fault.kind != "skip_model":
            path = self.box.project_dir / str(node["original_file_path"])
            saved[path] = path.read_text()
            with wh.connect(self.box.warehouse) as con:
                cols = wh.relations(con).get(fault.table.lower(), [])
            path.write_text(model_sql(fault, cols, saved[path], clock.now()))
            return
        now = clock.now()
        apply_faults(
            self.box.warehouse, [fault], now, budgets.query_seconds, budgets.query_memory_mb
        )
        if node is not None and node["resource_type"] == "seed":  # the build reloads its CSV
            csv = self.box.project_dir / str(node["original_file_path"])
            saved[csv] = csv.read_text()
            with wh.connect(self.box.warehouse) as con:
                wh.export_csv(con, fault.table.lower(), csv)

    def trial(self, fault: Fault) -> tuple[str, ...]:
        """The checks that caught ``fault``: failing after it, passing on the clean copy."""
        node = self.box.node_of(fault.table.lower())
        fresh_before: Failing = frozenset()
        feed = node is not None and node["resource_type"] == "source"
        if node is not None and feed and fault.kind in _FRESHNESS_KINDS:
            fresh_before = self._clean_freshness(node)
        shutil.copy2(self.clean, self.box.warehouse)
        saved: dict[Path, str] = {}
        caught: set[str] = set()
        try:
            self._break(fault, node, saved)
            if node is not None:
                args = [
                    "build",
                    "--select",
                    *dbt_select(self.manifest, [node["unique_id"]]).split(),
                ]
                if fault.kind == "skip_model":  # the nightly build ran, all but this model
                    args += ["--exclude", str(node["name"])]
                self._dbt(*args)
                caught |= dbt_failures(self.box.project_dir, self.manifest) - self.clean_dbt
                if feed and fault.kind in _FRESHNESS_KINDS:
                    caught |= self._freshness(node) - fresh_before
            caught |= self.watch.failing(self.box.warehouse) - self.clean_watch
        finally:
            for path, text in saved.items():
                path.write_text(text)
        return tuple(sorted(caught))

    def would_catch(self, table: str, sla: float | None) -> tuple[str, ...]:
        """After a trial: the assertion templates on ``table`` (the asset) that held on the
        clean copy and fail on the fault now (what a proposal would add, already tried)."""
        if (table, sla) not in self.templates:
            self.templates[(table, sla)] = candidates(self.clean, table, sla)
        return failing_templates(self.box.warehouse, table, self.templates[(table, sla)])


def _planned(settings: Settings, spec: EstateSpec) -> tuple[list[Planned], list[str], Watch]:
    """The draw, the tier assets no fault applies to, and the checks Upstream runs."""
    with connected(Target.of(settings)) as graph:
        ctx = read_context(graph, clock.now_ms())
        scope = resolve_scope(graph, spec, ctx)
        templates = tuple(template_assertions(graph))
        guards = tuple(guard_assertions(graph))
    estate = read_estate(settings)
    planned = draw(estate, spec, scope, spec.policies.detection)
    bare = [
        a
        for t in spec.tiers
        if t.requirements.min_fault_detection
        for a in tier_assets(spec, scope, t.name, estate)
        if not targets(estate, estate.relation(a))
    ]
    nodes = manifest_nodes(DbtProject.of(settings).manifest())
    return (
        planned,
        bare,
        Watch(
            tuple(monitored(spec, nodes)), templates, guards, renamed=tuple(estate.renamed.items())
        ),
    )


def _trial(bench: Bench, p: Planned, caught: tuple[str, ...], sla: float | None) -> FaultTrial:
    """The trial as the dial reads it. An assertion Upstream runs on the asset itself counts
    while DataHub holds it (a write-back adds one, `reset` takes it away), so it is kept as a
    template the dial looks for, not as a check that caught the fault once; a fault nothing
    else caught gets the templates that would have."""
    table = relation_of(p.asset)  # DataHub's name, as the catches are labelled
    prefix, suffix = "assertion ", f" on {table}"
    on_asset = [c for c in caught if c.startswith(prefix) and c.endswith(suffix)]
    mine = {c[len(prefix) : -len(suffix)] for c in on_asset}
    others = tuple(c for c in caught if c not in on_asset)
    would = set(mine)
    if not others:
        would |= set(bench.would_catch(bench.watch.table(p.asset), sla))
    return FaultTrial(p.label, p.fault.table, p.fault.kind, others, tuple(sorted(would)))


def run_detection(settings: Settings, say: Say = _quiet) -> Detection:
    """Measure, keep the result where the dial reads it, and return it."""
    spec = load_estate(settings.estate_file)
    policy = spec.policies.detection
    if not any(t.requirements.min_fault_detection for t in spec.tiers):
        raise UpstreamError(
            f"no tier of {settings.estate_file.name} sets min_fault_detection: nothing to measure",
            "add e.g. 'min_fault_detection: 0.8' to a tier's requirements",
        )
    project = DbtProject.of(settings)
    if not project.warehouse.exists() or not project.manifest_path.exists():
        raise UpstreamError(
            "no built estate to measure: detection breaks a sandbox copy of the warehouse and "
            f"the dbt project ({project.warehouse})",
            "build it first: `make demo`, or `upstream build` for your own project",
        )
    started = time.monotonic()
    planned, bare, watch = _planned(settings, spec)
    say(f"{len(planned)} faults drawn (seed {policy.seed}); building the sandbox")
    trials: dict[str, list[FaultTrial]] = {a: [] for a in bare}
    slas = {t.name: t.requirements.freshness_sla_hours for t in spec.tiers}
    not_tried: list[str] = []
    root = settings.state_dir / "sandboxes"
    root.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="detect-", dir=root))
    try:
        bench = Bench(sandbox_copy(project, folder), spec, watch, folder)
        bench.prepare()
        for i, p in enumerate(planned, start=1):
            if time.monotonic() - started > policy.max_seconds:
                not_tried.append(f"{p.label} for {short(p.asset)}: the time budget was spent")
                continue
            say(f"fault {i}/{len(planned)}: {p.label}")
            try:
                caught = bench.trial(p.fault)
            except UpstreamError as exc:  # a fault this estate cannot take is no measurement
                not_tried.append(f"{p.label} for {short(p.asset)}: {exc.problem}")
                continue
            trials.setdefault(p.asset, []).append(_trial(bench, p, caught, slas.get(p.tier)))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    found = Detection(
        clock.now_ms(),
        policy,
        tuple(sorted((a, tuple(ts)) for a, ts in trials.items())),
        tuple(not_tried),
        round(time.monotonic() - started, 1),
    )
    save(settings.state_dir, found)
    return found
