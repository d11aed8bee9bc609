"""Bring your own estate: a team's dbt-duckdb project, as it comes, built by `upstream build`.

The project in tests/estates/seeded keeps its raw data in seeds and names a profile of its own
that writes to a DuckDB file of its own: Upstream must build, test, profile, ingest and score
it without a single edit, and a fault on a seed must survive the build that reloads seeds."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from upstream_dagster import settings as settings_mod
from upstream_dagster.cli import app
from upstream_dagster.errors import UpstreamError

ROOT = Path(__file__).resolve().parent.parent
OWN = ROOT / "tests/estates/seeded"

pytestmark = pytest.mark.slow


def _digest(folder: Path) -> str:
    from upstream_dagster.evaluation.bench.own_project import tree_digest

    return tree_digest(folder)


def test_upstream_build_takes_a_teams_project_unmodified_and_a_seed_fault_sticks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from upstream_dagster.datahub import open_graph
    from upstream_dagster.evaluation.breakage import break_estate
    from upstream_dagster.evaluation.scenario import Scenario
    from upstream_dagster.warehouse import duckdb_warehouse as wh

    project = tmp_path / "their_project"
    shutil.copytree(OWN / "dbt", project)
    before = _digest(project)
    for key, value in {
        "UPSTREAM_DBT_SOURCE": str(project),
        "UPSTREAM_ESTATE": str(OWN / "estate.yaml"),
        "UPSTREAM_STATE_DIR": str(tmp_path / "state"),
        "UPSTREAM_CLOCK": "2026-11-29T06:00:00Z",
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("UPSTREAM_FEEDS", raising=False)

    result = CliRunner().invoke(app, ["build"])
    assert result.exit_code == 0, result.output[-3000:]
    assert "scored against DataHub" in result.output
    assert _digest(project) == before  # not one edit, not even their DuckDB file written
    settings = settings_mod.load()
    with wh.connect(settings.warehouse) as con:
        tables = wh.relations(con)
    # their target's schema is kept; only the path is Upstream's
    assert {"analytics.raw_invoices", "analytics.revenue_by_region"} <= set(tables)
    graph = open_graph(settings)
    try:
        names = {u.split(",")[1] for u in graph.search_prefix("urn:li:dataset:")}
    finally:
        graph.close()
    assert "warehouse.analytics.raw_invoices" in names  # the seed is in DataHub's lineage too

    fault = {"kind": "null_column", "relation": "analytics.raw_invoices", "column": "amount"}
    report = break_estate(
        settings,
        Scenario.model_validate(
            {"name": "seed", "faults": [{**fault, "fraction": 0.5}], "expect": {"abstain": True}}
        ),
    )
    assert any("back to seeds/raw_invoices.csv" in s for s in report.statements)
    with wh.connect(settings.warehouse) as con:  # the refresh reloaded the seed, and kept it
        assert wh.null_share(con, "analytics.raw_invoices", "amount") > 0.4
    assert _digest(project) == before  # the deployed copy changed, the team's never
    retype = {"kind": "change_type", "relation": "analytics.raw_invoices", "column": "amount"}
    with pytest.raises(UpstreamError, match="cannot stick"):
        break_estate(
            settings,
            Scenario.model_validate(
                {"name": "t", "faults": [{**retype, "to": "VARCHAR"}], "expect": {"abstain": True}}
            ),
        )

    # A column renamed on a seed sticks too (the CSV's header is rewritten) and breaks the
    # model that names it. The tracked CSV back alone is not enough: dbt reloads a seed into
    # the table it finds, which keeps the renamed column, and the build fails on the seed.
    rename = {"kind": "rename_column", "relation": "analytics.raw_invoices", "column": "amount"}
    broken = break_estate(
        settings,
        Scenario.model_validate(
            {"name": "r", "faults": [{**rename, "to": "amount_usd"}], "expect": {"abstain": True}}
        ),
    )
    assert broken.build_failed
    from upstream_dagster.healing import heal
    from upstream_dagster.runs import run_job
    from upstream_dagster.warehouse.dbt_project import DbtProject

    deployed = DbtProject.of(settings)
    deployed.deploy(force=True)
    deployed.parse()
    with pytest.raises(UpstreamError) as failed:
        run_job(settings, "estate_refresh")
    # the closing message is dbt's error on the seed and its fix, not a monitor downstream
    assert "step build_outcome failed: dbt could not build" in failed.value.problem
    assert "raw_invoices" in failed.value.problem and "monitor" not in failed.value.problem
    assert "dbt seed --full-refresh --select raw_invoices" in failed.value.problem

    healed = heal(settings)  # what `upstream heal` runs
    assert healed.reseeded == ["raw_invoices"]
    assert "raw_invoices+" in healed.rebuilt.split()
    with wh.connect(settings.warehouse) as con:
        columns = [c for c, _ in wh.relations(con)["analytics.raw_invoices"]]
        assert columns == ["id", "account_id", "issued_on", "amount"]  # the CSV's header
        assert wh.null_share(con, "analytics.raw_invoices", "amount") == 0
        assert wh.row_count(con, "analytics.revenue_by_region") > 0
    assert _digest(project) == before


def test_the_project_dbt_init_makes_runs_the_whole_loop_untouched(tmp_path: Path) -> None:
    """A project nobody wrote for Upstream: the one `dbt init` generates (its first model has a
    NULL id, so its own not_null test fails and dbt skips the second model). The yardstick a team
    runs on its own project must hold: files untouched, projected == measured, reset exact."""
    import subprocess
    import sys

    dbt = Path(sys.executable).with_name("dbt")
    made = subprocess.run(
        [str(dbt), "init", "acme_analytics", "--skip-profile-setup"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    estate = tmp_path / "estate.yaml"
    estate.write_text(
        "version: 1\ntiers:\n  - name: models\n    criticality: 0.5\n    match:\n"
        "      - names: ['my_*']\n    requirements:\n      require_owner: true\n"
        "      require_description: true\n      min_assertions: 1\n"
        "policies:\n  actuation: ratify\n  approvers: [dana]\n  identity: not-enforced\n"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "upstream_dagster.evaluation.bench.own_project",
            str(tmp_path / "acme_analytics"),
            str(estate),
            "--state",
            str(tmp_path / "state"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "FAIL" not in done.stdout and "checks held" in done.stdout
    assert "dial      before 50.0%" in done.stdout  # descriptions pass, owner and a test do not


def test_tests_dbt_never_read_are_named_with_the_key_dbt_reads() -> None:
    """A public project's schema.yml wrote `data-tests:` (a hyphen): dbt 1.11 keeps it as an
    unknown key, runs none of those tests and says nothing. `upstream build` says it."""
    from upstream_dagster.warehouse.dbt_project import unread_test_keys

    manifest = {
        "nodes": {
            "model.shop.orders": {
                "resource_type": "model",
                "name": "orders",
                "patch_path": "shop://models/schema.yml",
                "columns": {
                    "order_id": {"name": "order_id", "data-tests": ["unique", "not_null"]},
                    "amount": {"name": "amount", "description": "read as it should be"},
                },
            }
        },
        "sources": {
            "source.shop.raw.orders": {
                "resource_type": "source",
                "name": "orders",
                "original_file_path": "models/sources.yml",
                "columns": {"id": {"name": "id", "test": ["unique"]}},
            }
        },
    }
    said = unread_test_keys(manifest)
    assert said == [
        "models/schema.yml: model orders, column order_id: `data-tests` is not a key dbt reads, "
        "so these tests never ran (write `data_tests`)",
        "models/sources.yml: source orders, column id: `test` is not a key dbt reads, "
        "so these tests never ran (write `data_tests`)",
    ]
    assert unread_test_keys({"nodes": {}, "sources": {}}) == []


def test_a_feed_landed_under_another_table_name_is_queried_where_it_lives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dbt source with `identifier:` is named by its source name in DataHub
    (`landing.card_payments`) and lives in the warehouse as `landing.cp_drop_v2`. An incident
    caused there is confirmed by a query on the table that exists (it used to ask for
    `card_payments` and cite "Table ... does not exist"), a case naming the warehouse's table
    is graded on it, and an assertion proposed for the source can run."""
    from upstream_dagster.evaluation.runner import result, run_scenario
    from upstream_dagster.evaluation.scenario import Scenario
    from upstream_dagster.services.observe import runnable
    from upstream_dagster.spec.urns import dbt_urn
    from upstream_dagster.warehouse.duckdb_warehouse import Warehouse

    own = ROOT / "tests/estates/renamed_feed"
    for key, value in {
        "UPSTREAM_DBT_SOURCE": str(own / "dbt"),
        "UPSTREAM_ESTATE": str(own / "estate.yaml"),
        "UPSTREAM_FEEDS": str(own / "feeds.sql"),
        "UPSTREAM_STATE_DIR": str(tmp_path / "state"),
        "UPSTREAM_CLOCK": "2026-11-29T06:00:00Z",
    }.items():
        monkeypatch.setenv(key, value)
    built = CliRunner().invoke(app, ["build"])
    assert built.exit_code == 0, built.output[-3000:]
    settings = settings_mod.load()
    source = dbt_urn("warehouse", "landing", "card_payments")
    warehouse = Warehouse(settings.warehouse, manifest=settings.dbt_manifest)
    assert warehouse.relation(source) == "landing.cp_drop_v2"
    assert source in runnable(warehouse, [source])  # a proposal on it can run there

    case = Scenario.model_validate(
        {
            "name": "vendor_nulls",
            "faults": [
                {
                    "kind": "null_column",
                    "relation": "landing.cp_drop_v2",
                    "column": "payment_id",
                    "fraction": 0.4,
                }
            ],  # fmt: skip
            "trigger": {"dataset": "main.stg_payments", "check": "not_null"},
            "expect": {"root_cause": {"dataset": "landing.cp_drop_v2", "column": "payment_id"}},
        }
    )
    (outcome,) = run_scenario(settings, case, "alice")
    graded = result(case.named_as_in_datahub({"landing.card_payments": "landing.cp_drop_v2"}),
                    1, outcome)  # fmt: skip
    assert graded.top_right, graded
    ledger = outcome.verdict.ledger
    said = "\n".join(f"{e.kind}: {e.claim}" for e in ledger)
    assert "does not exist" not in said and "query_error" not in said, said
    confirmed = [e for e in ledger if e.kind == "forensic" and e.subject == source]
    assert confirmed and "cp_drop_v2" in dict(confirmed[0].detail)["statement"], said

    # a metadata fault naming the warehouse's table lands on DataHub's entity for it
    from upstream_dagster.datahub import open_graph
    from upstream_dagster.evaluation.scenario import Fault
    from upstream_dagster.evaluation.scenario_apply import apply_metadata
    from upstream_dagster.warehouse.names import renamed_at

    fault = Fault.model_validate(
        {"kind": "metadata", "relation": "landing.cp_drop_v2", "aspect": "description",
         "to": "moved by the vendor"}
    )  # fmt: skip
    graph = open_graph(settings)
    try:
        apply_metadata(graph, [fault], renamed_at(settings.dbt_manifest))
        aspects = graph.get_aspects([source], ["editableDatasetProperties"])[source]
    finally:
        graph.close()
    assert "moved by the vendor" in str(aspects), aspects

    # rows landed twice in the feed: the rebuild of what the fault reached runs the feed's own
    # tests, as a full build does (selecting the models below it left them out), so DataHub
    # sees the source's unique test fail on the source
    from upstream_dagster.evaluation.breakage import break_estate

    twice = {"kind": "duplicate_rows", "relation": "landing.cp_drop_v2",
             "where": "payment_id BETWEEN 50 AND 60"}  # ids the NULL burst left  # fmt: skip
    break_estate(settings, Scenario.model_validate(
        {"name": "d", "faults": [twice], "expect": {"abstain": True}}))  # fmt: skip
    graph = open_graph(settings)
    try:
        failed = {r.asserted_urn for r in graph.assertion_runs() if r.result == "FAILURE"}
    finally:
        graph.close()
    assert source in failed, failed

    # a column that needs quoting ("Card Type"): dbt names it with its quotes in its test, and
    # DataHub's dbt source copies them into the assertion's field; the check is on the column
    # the schema holds, so its lineage is walked to the feed
    from upstream_dagster import healing

    healing.heal(settings)
    quoted = Scenario.model_validate(
        {
            "name": "card_type_nulls",
            "faults": [{"kind": "null_column", "relation": "landing.cp_drop_v2",
                        "column": "Card Type", "fraction": 0.3}],
            "trigger": {"dataset": "main.stg_payments", "check": "not_null"},
            "expect": {"root_cause": {"dataset": "landing.cp_drop_v2", "column": "Card Type"}},
        }
    )  # fmt: skip
    (outcome,) = run_scenario(settings, quoted, "alice")
    assert outcome.verdict.check.column == "Card Type", outcome.verdict.check
    graded = result(quoted.named_as_in_datahub({"landing.card_payments": "landing.cp_drop_v2"}),
                    1, outcome)  # fmt: skip
    assert graded.top_right, graded
