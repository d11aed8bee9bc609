"""DataHub's own sample estate loads into the embedded DataHub through DataHub's file source, and
the read path works on it (an estate Upstream has never seen, with names it does not know)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from upstream_dagster.datahub.lite import LiteGraph
from upstream_dagster.datahub.readpath import read_context

ROOT = Path(__file__).resolve().parent.parent
# DataHub's own sample estate, vendored unchanged (tests/estates/showcase-ecommerce/SOURCE.md)
SHOWCASE = ROOT / "tests" / "estates" / "showcase-ecommerce"


@pytest.fixture(scope="module")
def showcase_state(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    if not SHOWCASE.exists():
        pytest.fail(f"{SHOWCASE} is missing: restore it from git")
    state = tmp_path_factory.mktemp("showcase")
    done = subprocess.run(
        [sys.executable, "-m", "upstream_dagster.cli", "load-estate", str(SHOWCASE)],
        env={**os.environ, "UPSTREAM_STATE_DIR": str(state)},
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return state, done.stdout


def test_load_estate_reports_landed_and_dropped_records(showcase_state: tuple[Path, str]) -> None:
    _, stdout = showcase_state
    assert "3685 landed, 188 dropped by the sink" in stdout
    assert "Cloud-only" in stdout


def test_read_path_works_on_the_showcase(showcase_state: tuple[Path, str]) -> None:
    state, _ = showcase_state
    graph = LiteGraph(state / "datahub-lite.sqlite")
    try:
        ctx = read_context(graph, as_of_ms=0)
    finally:
        graph.close()
    datasets = ctx.datasets()
    assert len(datasets) == 54  # 67 datasets, twins merged by the pack's own siblings aspects
    assert sum(1 for a in datasets if a.owners) == 19
    assert sum(1 for a in datasets if a.upstreams) > 30
    assert any(a.terms for a in datasets) and any(a.domains for a in datasets)
    assert any(a.structured_properties for a in datasets)
    assert any(a.entity_type == "dashboard" and a.upstreams for a in ctx.assets)
    # display names come from the entities' own aspects, read in the slices that reference them
    group = "urn:li:corpGroup:b2fd91.1e0398a3-113f-475e-b6fc-32ab72a634d2"
    assert ctx.display(group) == "DataHub SE Team"
    assert ctx.display("urn:li:corpuser:nobody") == "nobody"  # unknown: the URN's tail
    owners = {o for a in datasets for o in a.owners}
    assert sum(1 for o in owners if ctx.display(o) != o.rsplit(":", 1)[-1]) >= 10


@pytest.mark.slow
def test_the_coverage_loop_works_on_the_showcase(
    showcase_state: tuple[Path, str], tmp_path: Path
) -> None:
    state, _ = showcase_state
    shipped = ROOT / "upstream_dagster" / "estates" / "showcase-ecommerce.yaml"
    ratify = tmp_path / "showcase.yaml"
    env = {**os.environ, "UPSTREAM_STATE_DIR": str(state), "UPSTREAM_KEYS_DIR": str(tmp_path)}

    def cli(*args: str, estate: Path = ratify) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "upstream_dagster.cli", *args],
            cwd=ROOT,
            env={**env, "UPSTREAM_ESTATE": str(estate)},
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    # the reviewer signs: a key made by keygen, its public half listed in the ratify copy
    made = cli("keygen", "datahub", estate=shipped)
    (public,) = re.findall(r"datahub: (\S+)", made)
    ratify.write_text(
        shipped.read_text()
        .replace("actuation: dry-run", "actuation: ratify")
        .replace(
            "approvers: [datahub]", f"approvers: [datahub]\n  approver_keys: {{datahub: {public}}}"
        )
    )
    shown = cli("plan", estate=shipped)
    digest = re.search(r"^batch (\w+):", shown, re.M)
    assert digest, shown
    assert "nothing was written" in cli(
        "approve", "--all", "--digest", digest[1], "--reviewer", "datahub", "--yes", estate=shipped
    )
    # the nightly score run records the batch: the dry-run's policy comes into force on first
    # use, and it lists no key: nobody can prove who they are under it, so the deployment pins
    # the ratify copy's policy instead
    assert "planned under policy" in cli("plan", "--record", estate=shipped)
    shown = cli("trust")
    ratified = re.search(r"^estate.yaml: policy (\w+), NOT in force", shown, re.M)
    assert ratified, shown
    refused = subprocess.run(
        [sys.executable, "-m", "upstream_dagster.cli", "trust", "--reviewer", "datahub"],
        cwd=ROOT,
        env={**env, "UPSTREAM_ESTATE": str(ratify)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert refused.returncode != 0 and "lists no key for 'datahub'" in refused.stderr
    assert f"UPSTREAM_POLICY_PIN={ratified[1]}" in refused.stderr
    env["UPSTREAM_POLICY_PIN"] = ratified[1]
    planned = cli("plan")
    digest = re.search(r"^batch (\w+):", planned, re.M)
    assert digest, planned
    assert "35.7% ->" in planned
    # the reviewer reads DataHub's display names and platforms, not the pack's UUID-shaped
    # URNs, and twins on two platforms do not read as duplicates
    assert "Customer Analytics Measures (powerbi)" in planned
    assert "order_items (s3)" in planned and "order_items (dbt)" in planned
    assert "urn:li:" not in planned

    def body(text: str) -> list[str]:  # the batch, less the lines on how to approve it
        return [line for line in text.splitlines() if not line.startswith(("  (", "planned "))]

    assert body(cli("plan", "--record")) == body(planned)  # the read plans what a run records
    cli("approve", "--all", "--digest", digest[1], "--reviewer", "datahub", "--yes")
    assert ": equal" in cli("verify")
    cli("reset", "--yes")
    assert "35.7%" in cli("score").splitlines()[4]


def test_the_showcase_plan_is_what_a_steward_would_accept(showcase_state: tuple[Path, str]) -> None:
    """Issue 29 on DataHub's own sample estate, every batch at once: descriptions that say
    where their text comes from and never list columns, column descriptions carried to every
    column that copies a documented one, owners and domains from the neighbours that agree,
    and every violation left with the rule that looked and what it found."""
    from upstream_dagster.conformance.carry import Carry
    from upstream_dagster.conformance.plan import plan
    from upstream_dagster.conformance.requirements import is_generated
    from upstream_dagster.spec.loader import load_estate

    state, _ = showcase_state
    graph = LiteGraph(state / "datahub-lite.sqlite")
    try:
        ctx = read_context(graph, as_of_ms=0)
    finally:
        graph.close()
    spec = load_estate(ROOT / "upstream_dagster" / "estates" / "showcase-ecommerce.yaml")
    every = spec.policies.model_copy(update={"max_proposals_per_run": 1000})
    batch = plan(ctx, spec.model_copy(update={"policies": every}), 0)
    by = {
        kind: [p for p in batch.proposals if p.requirement == kind]
        for kind in ("require_description", "require_owner", "require_domain")
    }
    texts = [p.change.values[0] for p in by["require_description"]]
    assert not [t for t in texts if re.search(r"\d+ columns? \(", t)]  # no list of columns
    sources = [p.evidence[0].split(":")[0] for p in by["require_description"]]
    assert sources.count("copy") == 24 and sources.count("sql") == 4
    generated = [p for p in by["require_description"] if is_generated(p.change.values[0])]
    assert len(generated) == 10 and all(p.tier == "bi" for p in generated)
    assert all(batch.shown(p).startswith("[generated] ") for p in generated)
    # what the SQL does, in the SQL's own words, and whose sentence is quoted
    tableau = next(p for p in by["require_description"] if p.evidence[0].startswith("sql"))
    assert "One row per" in tableau.change.values[0] and "It computes" in tableau.change.values[0]
    # every undocumented column that carries a documented one unchanged inherits its text
    carry = Carry(ctx)
    scored = {r.asset for r in batch.base.results}
    inheritable = {
        (a.urn, c.path)
        for a in ctx.datasets()
        if a.urn in scored
        for c in a.columns
        if not c.description and carry.documented(a, c) is not None
    }
    inherited = {(p.asset, path) for p in batch.proposals for path, _ in p.change.columns} | {
        (p.asset, path)
        for p in batch.proposals
        if p.change.kind == "set_column_descriptions"
        for path in p.change.values[::2]
    }
    assert len(inheritable) == 426 and inherited == inheritable
    customers = next(p for p in texts if p.startswith("Contains customer demographic"))
    assert customers  # the dbt model's own text, word for word on its S3 and Postgres copies
    # owners and domains where neighbours agree, each naming them
    assert len(by["require_owner"]) == 33 and len(by["require_domain"]) == 11
    for p in by["require_owner"] + by["require_domain"]:
        assert re.match(r"(copies|lineage|container|consumers): .+ \(", p.evidence[0]), p.evidence
        assert "(dbt)" in p.evidence[0] or "(powerbi)" in p.evidence[0]
    # what stays says why, rule by rule; a true tie names who is tied
    assert len(batch.unfixable) == 6
    assert all(re.match(r"(owners|domains|description): ", u.reason) for u in batch.unfixable)
    assert all("nothing in the graph to infer from" not in u.reason for u in batch.unfixable)
    tie = next(
        u for u in batch.unfixable if u.requirement == "require_domain" and "tie" in u.reason
    )
    assert "Data Platform Team, Ecommerce Operations (0.5 each)" in tie.reason
    # the dial counts documented and generated descriptions apart
    assert (batch.base.descriptions.documented, batch.base.descriptions.missing) == (14, 40)
    after = batch.projected.descriptions
    assert (after.documented, after.generated, after.missing) == (42, 10, 2)
    # names as people read them: no URN, no Avro bookkeeping in a field name (a description
    # copied word for word keeps DataHub's own mention links, which its UI renders as names)
    shown = " ".join(
        batch.shown(p).replace(p.change.values[0], "") + " ".join(p.evidence)
        for p in batch.proposals
    )
    assert "urn:li:" not in shown and "[version=" not in shown


def test_an_estate_file_that_selects_nothing_here_says_so_and_fails(
    showcase_state: tuple[Path, str],
) -> None:
    """The demo's estate.yaml names the demo's tags and tables: on DataHub's sample estate it
    selects nothing, and the scheduler or person running the score must not read that as 0%."""
    state, _ = showcase_state
    done = subprocess.run(
        [sys.executable, "-m", "upstream_dagster.cli", "score", "--estate", "estate.yaml"],
        cwd=ROOT,
        env={**os.environ, "UPSTREAM_STATE_DIR": str(state)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    overall = next(line for line in done.stdout.splitlines() if line.startswith("overall"))
    assert overall.split()[1:] == ["0", "assets", "0", "checks", "0", "passed", "n/a"]
    assert "Nothing was scored" in done.stdout and "54 datasets seen" in done.stdout
    assert "tier-1 match[0] (tags: tier1)" in done.stdout  # which selector, as the file says it


def test_a_rename_seen_only_on_the_warehouse_twin_is_found_on_an_estate_upstream_never_saw(
    showcase_state: tuple[Path, str], tmp_path: Path
) -> None:
    """DataHub's sample estate, a fault staged the way a Snowflake ingestion would record it: the
    warehouse table (the secondary sibling of a dbt source) loses a column to a rename, and a
    native DataHub field assertion that never passed before fails downstream. No warehouse is
    attached: the investigation rests on DataHub's evidence alone and must still name the cause."""
    import shutil

    from upstream_dagster.datahub.lite import LiteGraph

    state, _ = showcase_state
    copy = tmp_path / "state"
    copy.mkdir()
    shutil.copy(state / "datahub-lite.sqlite", copy / "datahub-lite.sqlite")
    snowflake = "urn:li:dataset:(urn:li:dataPlatform:snowflake,b2fd91.order_entry_db"
    feed, mart = (
        f"{snowflake}.order_entry.orders,PROD)",
        f"{snowflake}.analytics.order_details,PROD)",
    )
    graph = LiteGraph(copy / "datahub-lite.sqlite")
    try:
        sib = graph.get_aspects([feed], ["siblings"])[feed]["siblings"]
        assert sib["primary"] is False  # the dbt source is primary: the rename is on its twin
        schema = graph.get_aspects([feed], ["schemaMetadata"])[feed]["schemaMetadata"]
        for f in schema["fields"]:
            if f["fieldPath"] == "cost_of_delivery":
                f["fieldPath"] = "delivery_cost"
        assert graph.write_aspect(feed, "schemaMetadata", schema).written
        check = "urn:li:assertion:staged-cost-not-null"
        info = {
            "type": "FIELD",
            "description": "cost of delivery is never null",
            "fieldAssertion": {
                "type": "FIELD_VALUES",
                "entity": mart,
                "fieldValuesAssertion": {
                    "field": {"path": "cost_of_delivery", "type": "NUMBER", "nativeType": "NUMBER"},
                    "operator": "NOT_NULL",
                    "failThreshold": {"type": "COUNT", "value": 0},
                    "excludeNulls": False,
                },
            },
        }
        assert graph.write_aspect(check, "assertionInfo", info).written
        event = {
            "timestampMillis": int(time.time() * 1000) + 1000,
            "assertionUrn": check,
            "asserteeUrn": mart,
            "runId": "staged",
            "status": "COMPLETE",
            "result": {"type": "FAILURE"},
        }
        assert graph.write_aspect(check, "assertionRunEvent", event).written
    finally:
        graph.close()
    shipped = ROOT / "upstream_dagster" / "estates" / "showcase-ecommerce.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "upstream_dagster.cli", "investigate"],
        cwd=ROOT,
        env={**os.environ, "UPSTREAM_STATE_DIR": str(copy), "UPSTREAM_ESTATE": str(shipped)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "root cause order_entry.orders.cost_of_delivery (rename)" in done.stdout, done.stdout
