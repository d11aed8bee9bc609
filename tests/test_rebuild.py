"""Rebuild what changed: `break` and `heal` build only the dbt nodes their change reaches (dbt's
``<node>+``), and end where a full build does. Asserted by the selection each run used, what dbt
ran, and the warehouse afterwards, on the real demo estate (never by time)."""

from __future__ import annotations

import json
from pathlib import Path

from upstream_dagster import settings as settings_mod
from upstream_dagster.warehouse import duckdb_warehouse as wh

ROOT = Path(__file__).resolve().parent.parent


def _tables(warehouse: Path) -> dict[str, tuple[object, ...]]:
    """Every relation's columns, rows and a hash of its rows."""
    with wh.connect(warehouse) as con:
        out = {}
        for name, cols in wh.relations(con).items():
            query = f"SELECT count(*), sum(hash(t)) FROM {wh.rel(name)} t"
            rows, total = con.execute(query).fetchone() or (0, 0)
            out[name] = (tuple(cols), rows, str(total))
        return out


def _ran(settings: settings_mod.Settings) -> set[str]:
    """The models dbt ran (built, failed or skipped) in the last build."""
    results = json.loads((settings.artifacts_dir / "run_results.json").read_text())["results"]
    return {r["unique_id"] for r in results if r["unique_id"].startswith("model.")}


def test_break_and_heal_rebuild_what_the_fault_reached_and_end_where_a_full_build_does(
    estate: settings_mod.Settings, built_estate: Path
) -> None:
    from upstream_dagster.defs.estate_jobs import REBUILD_TAG
    from upstream_dagster.evaluation.breakage import break_estate
    from upstream_dagster.evaluation.scenario import load_scenario
    from upstream_dagster.healing import heal
    from upstream_dagster.runs import dagster_instance
    from upstream_dagster.warehouse.built_state import downstream
    from upstream_dagster.warehouse.dbt_project import DbtProject

    clean = _tables(estate.warehouse)
    manifest = DbtProject.of(estate).manifest()
    models = {u for u in manifest["nodes"] if u.startswith("model.")}
    orders = "source.upstream_demo.shop.orders"
    reached = downstream(manifest, {orders}) & models

    report = break_estate(estate, load_scenario(ROOT / "scenarios/loud_rename.yaml"))
    assert report.build_failed  # stg_orders names the renamed column outright
    run = dagster_instance(estate).get_run_by_id(report.run_id)
    assert run is not None and run.tags[REBUILD_TAG] == "source:shop.orders+"
    assert _ran(estate) == reached and len(reached) < len(models)
    with wh.connect(estate.warehouse) as con:
        assert "promotion_code" in dict(wh.relations(con)["shop.orders"])

    healed = heal(estate)
    assert healed.reseeded == []  # the demo has no seeds: its feeds are loaded by Upstream
    assert "source:shop.orders+" in healed.rebuilt.split()
    assert _ran(estate) == reached  # what the fault reached, and nothing besides
    assert _tables(estate.warehouse) == clean  # byte for byte what the full build left
    assert _tables(built_estate / "warehouse.duckdb") == clean


def test_a_refresh_with_nothing_changed_rebuilds_everything(estate: settings_mod.Settings) -> None:
    """No difference from the last build is no reason to skip the build someone asked for: the
    refresh is then the full one, as before."""
    from upstream_dagster.defs.estate_jobs import REBUILD_TAG
    from upstream_dagster.runs import run_job

    result = run_job(estate, "estate_refresh")
    assert REBUILD_TAG not in result.dagster_run.tags
    manifest = json.loads((estate.dbt_project_dir / "target" / "manifest.json").read_text())
    assert _ran(estate) == {u for u in manifest["nodes"] if u.startswith("model.")}


def test_a_build_that_lacks_a_raw_feed_says_which_and_how_to_load_it(
    shared_estate: settings_mod.Settings,
) -> None:
    from upstream_dagster.services.build_failure import fix_for
    from upstream_dagster.warehouse.dbt_project import DbtProject

    manifest = DbtProject.of(shared_estate).manifest()
    error = "Catalog Error: Table with name orders does not exist!"
    missing = [("model.upstream_demo.stg_orders", error)]
    fix = fix_for(missing, manifest, shared_estate.dbt_source_dir)
    assert "shop.orders" in fix and "FEEDS=" in fix and "model SQL" not in fix
    seed = [("seed.upstream_demo.raw_invoices", 'Binder Error: column "amount" not found')]
    assert "dbt seed --full-refresh --select raw_invoices" in fix_for(seed, manifest, Path("."))
    model = [("model.upstream_demo.stg_orders", 'Referenced column "promo_code" not found')]
    assert "fix the model SQL" in fix_for(model, manifest, Path("."))


def test_a_refresh_reruns_the_monitors_and_clock_reading_tests_on_what_it_does_not_rebuild(
    estate: settings_mod.Settings,
) -> None:
    """What a targeted refresh skips keeps a current verdict: every estate.yaml monitor runs
    (its verdict reads the clock and the observation before it, not only the table), and so
    does a dbt test whose SQL reads the clock; a dbt test on an untouched model does not."""
    import dagster as dg
    from dagster_dbt.asset_utils import DAGSTER_DBT_UNIQUE_ID_METADATA_KEY as DBT_ID

    from upstream_dagster.definitions import build
    from upstream_dagster.defs.estate import node_keys
    from upstream_dagster.evaluation.breakage import break_estate
    from upstream_dagster.evaluation.scenario import Scenario
    from upstream_dagster.runs import dagster_instance
    from upstream_dagster.warehouse import built_state
    from upstream_dagster.warehouse.built_state import downstream
    from upstream_dagster.warehouse.dbt_project import DbtProject

    project = DbtProject.of(estate)
    manifest = project.manifest()
    models = {u: p for u, p in manifest["nodes"].items() if u.startswith("model.")}
    # the feed whose change reaches the fewest models, and a model it does not reach
    source = min(manifest["sources"], key=lambda s: len(downstream(manifest, {s}) & set(models)))
    reached = downstream(manifest, {source})
    aside = sorted(u for u in models if u not in reached)[0]
    probe = project.project_dir / "tests" / "upstream_probe_reads_the_clock.sql"
    probe.parent.mkdir(exist_ok=True)
    probe.write_text(
        f"select * from {{{{ ref('{models[aside]['name']}') }}}} "
        "where current_date < date '1970-01-01'\n"
    )
    project.parse()
    # the probe is part of the build on record (its model's table is what it was)
    built_state.record(project, estate.state_dir, estate.artifacts_dir / "run_results.json", None)

    props = manifest["sources"][source]
    relation = f"{props['schema']}.{props.get('identifier') or props['name']}"
    fault = {"kind": "delete_rows", "relation": relation, "fraction": 0.5}
    scenario = {"name": "t", "faults": [fault], "expect": {"abstain": True}}
    report = break_estate(estate, Scenario.model_validate(scenario))

    job = build(estate).resolve_job_def("estate_refresh")
    specs = [s for a in job.asset_layer.asset_graph.assets_defs for s in a.check_specs]
    monitors = {s.key for s in specs if DBT_ID not in (s.metadata or {})}
    keys = node_keys(manifest)
    assert any(keys[u] == m.asset_key for m in monitors for u in models if u not in reached)
    events = dagster_instance(estate).all_logs(
        report.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION
    )
    ran = set()
    for event in events:
        data = event.dagster_event.event_specific_data if event.dagster_event else None
        assert isinstance(data, dg.AssetCheckEvaluation)
        ran.add(dg.AssetCheckKey(data.asset_key, data.check_name))
    assert monitors <= ran  # every monitor, on what was rebuilt and on what was not
    results = json.loads((estate.artifacts_dir / "run_results.json").read_text())["results"]
    dbt_ran = {r["unique_id"] for r in results}
    assert aside not in dbt_ran  # the model the fault does not reach was not rebuilt
    assert any("upstream_probe_reads_the_clock" in u for u in dbt_ran)  # its clock test ran
    untouched_tests = {
        u for u, p in manifest["nodes"].items()
        if u.startswith("test.") and not set(p["depends_on"]["nodes"]) & reached
    }  # fmt: skip
    assert untouched_tests and not untouched_tests & dbt_ran


def test_a_sandbox_copy_keeps_the_deployed_projects_parse(
    estate: settings_mod.Settings, tmp_path: Path
) -> None:
    """Every verification runs dbt in a throwaway copy of the project: the copy must not make
    dbt parse the whole project again (seconds per dbt command), which it did while the profile
    named the warehouse by its absolute path."""
    from upstream_dagster.warehouse.dbt_project import DbtProject
    from upstream_dagster.warehouse.sandbox import _sandbox

    box = _sandbox(DbtProject.of(estate), tmp_path)
    model = next(n for n in box.manifest()["nodes"].values() if n["resource_type"] == "model")
    done = box.run("ls", "--select", model["name"])
    assert done.returncode == 0, done.stdout
    log = (box.project_dir / "logs" / "dbt.log").read_text()
    assert "Partial parsing enabled" in log and "Unable to do partial parsing" not in log


def test_the_sandbox_builds_only_what_lies_between_the_fix_and_the_failing_check(
    estate: settings_mod.Settings,
) -> None:
    """Verifying a fix needs the failing check's ancestors, not everything below the change:
    the sandbox's selection is the models on the paths from what the fix rebuilds to the
    symptom, while the fix itself keeps its whole rebuild."""
    from upstream_dagster.reliability.health import FailingCheck, Window
    from upstream_dagster.reliability.remediation import Remedy
    from upstream_dagster.reliability.walk import Trigger
    from upstream_dagster.services.investigation import Triage, toward_check
    from upstream_dagster.warehouse.dbt_project import DbtProject

    project = DbtProject.of(estate)
    manifest = project.manifest()
    models = {u: n for u, n in manifest["nodes"].items() if n["resource_type"] == "model"}

    def reach(uid: str, edges: dict[str, list[str]]) -> set[str]:
        out, stack = {uid}, [uid]
        while stack:
            for c in edges.get(stack.pop(), []):
                if c in models and c not in out:
                    out.add(c)
                    stack.append(c)
        return out

    # the model with the most below it, and a model below it with other ancestors besides
    start = max(models, key=lambda u: len(reach(u, manifest["child_map"])))
    below = reach(start, manifest["child_map"])
    symptom = max(below - {start}, key=lambda u: len(reach(u, manifest["parent_map"]) - below))
    node = models[symptom]
    check = FailingCheck("urn:li:assertion:x", "rows", None, 2_000)
    urn = f"urn:li:dataset:(urn:li:dataPlatform:dbt,wh.{node['schema']}.{node['name']},PROD)"
    t = Triage("k", Trigger(urn, check, Window(1_000, 2_000)), None, (), (), 0, "m", None, 0, {})
    fix = Remedy("patch", "rewrite", rebuild=(f"{models[start]['name']}+",))

    def selected(selectors: tuple[str, ...]) -> set[str]:
        done = project.run("ls", "--resource-type", "model", "--output", "name", "--select",
                           *selectors, "--quiet")  # fmt: skip
        assert done.returncode == 0, done.stdout
        return set(done.stdout.split())

    between = below & reach(symptom, manifest["parent_map"])
    path = selected(toward_check(project, fix, t).rebuild)
    assert path == {models[u]["name"] for u in between}
    assert path < selected(fix.rebuild)  # fewer models built to see the check turn green
