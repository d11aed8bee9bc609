"""The reliability core on plain records: the SQL guard, the correlator, the walk's stop rule,
abstention, memory, the critic's arithmetic and the constructed patch. Names here are not the
demo's: the controller must not know them."""

from __future__ import annotations

import math
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from upstream_dagster.reliability.evidence import Score
from upstream_dagster.reliability.health import (
    ColumnProfile,
    FailingCheck,
    NodeView,
    Profile,
    SchemaEvent,
    Window,
    correlate,
)
from upstream_dagster.reliability.investigate import Memory, Trigger, investigate
from upstream_dagster.reliability.remediation import remedy, rewrite_model
from upstream_dagster.reliability.rules import Observation, judge
from upstream_dagster.reliability.sqlguard import guard
from upstream_dagster.spec.urns import relation_of

ALLOWED = {"crm.accounts", "billing.invoices"}


@pytest.mark.parametrize(
    "sql",
    [
        "DROP TABLE crm.accounts",
        "CREATE TABLE x AS SELECT 1",
        "ALTER TABLE crm.accounts ADD COLUMN y INT",
        "DELETE FROM crm.accounts",
        "UPDATE crm.accounts SET status = NULL",
        "INSERT INTO crm.accounts SELECT * FROM crm.accounts",
        "SELECT 1; SELECT 2",
        "SELECT * FROM crm.accounts; DROP TABLE crm.accounts",
        "PRAGMA database_list",
        "ATTACH 'other.db' AS other",
        "COPY crm.accounts TO '/tmp/out.csv'",
        "INSTALL httpfs",
        "LOAD httpfs",
        "SET enable_external_access = true",
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_csv_auto('/etc/hostname')",
        "SELECT * FROM read_parquet('s3://bucket/x.parquet')",
        "SELECT * FROM read_json('https://example.com/x.json')",
        "SELECT * FROM glob('/etc/*')",
        "SELECT * FROM '/etc/passwd.csv'",
        "SELECT * FROM pragma_version()",
        "SELECT getenv('HOME')",
        "SELECT * FROM crm.accounts JOIN secret.keys USING (id)",
    ],
)
def test_the_guard_refuses_anything_but_one_select_over_known_tables(sql: str) -> None:
    checked = guard(sql, ALLOWED)
    assert checked.refused, sql
    assert checked.reason  # every refusal says why


def test_the_guard_injects_a_limit_and_lowers_a_large_one() -> None:
    assert guard("SELECT count(*) FROM crm.accounts", ALLOWED).sql.endswith("LIMIT 200")
    assert guard("SELECT * FROM warehouse.crm.accounts LIMIT 5", ALLOWED).sql.endswith("LIMIT 5")
    assert guard("SELECT * FROM crm.accounts LIMIT 99999", ALLOWED).sql.endswith("LIMIT 200")


def test_a_remove_and_an_add_of_the_same_type_in_one_transaction_are_a_rename() -> None:
    events = (
        SchemaEvent(10, "REMOVE", "acct_status", "VARCHAR"),
        SchemaEvent(10, "ADD", "account_status", "VARCHAR"),
        SchemaEvent(20, "REMOVE", "balance", "DECIMAL"),
        SchemaEvent(20, "ADD", "balance_eur", "VARCHAR"),
    )
    changes = {(c.kind, c.column, c.new_column) for c in correlate(events)}
    assert ("rename", "acct_status", "account_status") in changes
    assert ("column_removed", "balance", None) in changes  # different types: not a rename
    assert ("column_added", "balance_eur", None) in changes


# -- a synthetic estate: crm.accounts -> stg.accounts -> mart.account_health -----------------
def urn(name: str) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:dbt,wh.{name},PROD)"


SRC, STG, INT, MART, OTHER = (
    urn("crm.accounts"),
    urn("stg.accounts"),
    urn("int.accounts_daily"),
    urn("mart.account_health"),
    urn("billing.invoices"),
)
W = Window(last_good_ms=1_000, symptom_ms=2_000)


def profiles(col: str, before: float, after: float, rows: tuple[int, int] = (100, 100)) -> Any:
    return (
        Profile(900, rows[0], ((col, ColumnProfile(before, 5.0)),)),
        Profile(1_500, rows[1], ((col, ColumnProfile(after, 5.0)),)),
    )


@dataclass
class Graph:
    """Plain records standing in for what DataHub and the warehouse return."""

    views: dict[str, NodeView]
    ups: dict[str, tuple[str, ...]]
    columns: tuple[Any, ...] = ()
    reads: int = 0
    asked: list[str] = field(default_factory=list)

    def upstreams(self, u: str) -> tuple[str, ...]:
        return self.ups.get(u, ())

    def observe(self, urns: tuple[str, ...], with_runs: bool = True) -> dict[str, NodeView]:
        self.reads += 2
        self.asked += urns
        return {u: self.views.get(u, NodeView(u, u)) for u in urns}

    def column_edges(self) -> tuple[Any, ...]:
        return self.columns

    def relation(self, urn: str) -> str:
        return relation_of(urn)

    def forensic(self, sql: str, relations: set[str]) -> tuple[str | None, list[Any], str]:
        checked = guard(sql, relations)
        if checked.refused:
            return None, [], checked.reason
        return checked.sql, [(100, 100)], ""


def renamed_estate() -> Graph:
    failing = FailingCheck("urn:li:assertion:m1", "health score not zero", "score", 2_000)
    return Graph(
        views={
            MART: NodeView(MART, "mart.account_health", (failing,)),
            STG: NodeView(STG, "stg.accounts", profiles=profiles("acct_status", 0.0, 1.0)),
            SRC: NodeView(
                SRC,
                "crm.accounts",
                schema=(
                    SchemaEvent(500, "ADD", "acct_status", "VARCHAR"),
                    SchemaEvent(1_200, "REMOVE", "acct_status", "VARCHAR"),
                    SchemaEvent(1_200, "ADD", "account_status", "VARCHAR"),
                ),
            ),
        },
        ups={MART: (STG, OTHER), STG: (SRC,)},
        columns=(
            ((SRC, "acct_status"), (STG, "acct_status")),
            ((STG, "acct_status"), (MART, "score")),
        ),
    )


def trigger(g: Graph) -> Trigger:
    return Trigger(MART, g.views[MART].failing[0], W)


def test_the_cause_is_the_unhealthy_node_whose_upstreams_are_healthy_not_the_staging_symptom() -> (
    None
):
    g = renamed_estate()
    inv = investigate(trigger(g), g)
    top, score = inv.ranked[0]
    assert (top.cause, top.column, top.failure_class) == (SRC, "acct_status", "rename")
    assert top.renamed_to == "account_status"
    assert STG in inv.unhealthy  # the staging table is unhealthy, and a symptom only
    assert score.confidence >= 0.7
    cited = {inv.ledger[i].kind for i in top.cites}
    assert {"timeline", "profile", "lineage", "forensic"} <= cited


def test_only_the_failing_check_itself_is_no_evidence_so_the_run_abstains() -> None:
    failing = FailingCheck("urn:li:assertion:m1", "row volume", None, 2_000)
    g = Graph({MART: NodeView(MART, "mart", (failing,))}, {MART: (STG,), STG: (SRC,)})
    inv = investigate(Trigger(MART, failing, W), g)
    assert inv.ranked == []
    assert inv.walked == 3  # it still looked all the way up


def test_a_change_before_the_last_healthy_build_is_not_the_cause() -> None:
    g = renamed_estate()
    src = g.views[SRC]
    g.views[SRC] = NodeView(
        SRC,
        src.name,
        schema=tuple(SchemaEvent(800, e.operation, e.column, e.native_type) for e in src.schema),
    )
    inv = investigate(trigger(g), g)
    assert inv.ranked[0][0].cause == STG  # the NULLs in staging are all that is left


def test_right_memory_confirms_with_fewer_reads_and_wrong_memory_does_not_stick() -> None:
    cold_graph = renamed_estate()
    cold = investigate(trigger(cold_graph), cold_graph)
    assert not cold.memory_used
    warm_graph = renamed_estate()
    warm = investigate(trigger(warm_graph), warm_graph, Memory(SRC, "acct_status", "rename"))
    assert warm.ranked[0][0].cause == SRC and warm.ranked[0][0].from_memory
    assert warm.ranked[0][1].memory == 1.0
    assert warm_graph.reads * 2 <= cold_graph.reads
    wrong_graph = renamed_estate()
    wrong = investigate(trigger(wrong_graph), wrong_graph, Memory(OTHER, "amount", "null_jump"))
    assert wrong.ranked[0][0].cause == SRC and wrong.ranked[0][1].memory == 0.0
    assert any("memory contradicted" in e.claim for e in wrong.ledger.items)


def test_a_fault_on_a_branch_that_does_not_feed_the_symptom_is_never_blamed() -> None:
    g = renamed_estate()
    unrelated = urn("billing.raw_invoices")
    g.views[unrelated] = NodeView(unrelated, "raw", profiles=profiles("amount", 0.0, 0.9))
    inv = investigate(trigger(g), g)
    assert unrelated not in {h.cause for h, _ in inv.ranked}
    assert unrelated not in g.asked


def test_a_check_that_reads_another_table_walks_that_table_branch_too() -> None:
    """A referential-integrity test on the mart fails because its parent table lost rows: the
    parent is on another branch, which lineage alone would never walk."""
    parent, feed = urn("stg.invoices"), urn("billing.invoices_feed")
    failing = FailingCheck("urn:li:assertion:rel", "relationships to stg.invoices", "inv_id", 2_000)
    g = Graph(
        views={
            MART: NodeView(MART, "mart.account_health", (failing,)),
            parent: NodeView(parent, "stg.invoices", profiles=profiles("x", 0, 0, (100, 30))),
            feed: NodeView(feed, "billing.invoices_feed", profiles=profiles("x", 0, 0, (100, 30))),
        },
        ups={MART: (STG,), STG: (SRC,), parent: (feed,)},
    )
    alone = investigate(Trigger(MART, failing, W), g)
    assert alone.ranked == [] and feed not in g.asked
    inv = investigate(Trigger(MART, failing, W, inputs=(parent,)), g)
    top = inv.ranked[0][0]
    assert (top.cause, top.failure_class) == (feed, "volume_drop")
    assert top.path == (feed, parent, MART)


def test_confidence_is_the_fitted_logistic_of_the_evidence_and_explains_its_arithmetic() -> None:
    from upstream_dagster.reliability.evidence import FEATURES, WEIGHTS

    weak = Score(0.5, 1, 1 / 3, 0, 0, 0, 0, hard=False)
    strong = Score(1, 1, 1, 0, 1, 1, 1, hard=True)
    assert 0 < weak.confidence < strong.confidence < 1
    z = WEIGHTS[0] + sum(w * x for w, x in zip(WEIGHTS[1:], strong.features, strict=True))
    assert strong.confidence == pytest.approx(1 / (1 + math.exp(-z)), abs=1e-4)
    text = strong.explain()
    assert text.startswith(f"logistic({WEIGHTS[0]:+.2f}") and text.endswith(
        f"= {strong.confidence:.2f}"
    )
    assert all(name in text for name in FEATURES if getattr(strong, name))


def test_monitor_rules_report_what_they_measured() -> None:
    assert not judge("zero_values", Observation(0.0), 0.5).passed
    assert judge("drop_vs_trailing_average", Observation(60.0, 100.0), 0.5).passed
    assert not judge("drop_vs_trailing_average", Observation(40.0, 100.0), 0.5).passed
    assert not judge("null_rate_jump", Observation(0.9, 0.0), 0.2).passed
    missing = judge("zero_values", Observation(None, missing="column x is missing"), 0.5)
    assert not missing.passed and "missing" in missing.message


def test_the_rename_patch_prefers_the_new_name_and_applies_with_git(tmp_path: Path) -> None:
    model = (
        "{%- set feed = source('crm', 'accounts') -%}\n"
        "select\n    account_id,\n    {{ tolerant(feed, 'acct_status', 'varchar') }}\n"
        "from {{ feed }}\n"
    )
    bare = "select\n    account_id,\n    acct_status,\n    region\nfrom {{ src }}\n"
    assert (
        "upstream_renamed_column(source('crm', 'accounts'), 'account_status', 'acct_status')"
        in (
            rewrite_model(model, "acct_status", "account_status", "source('crm', 'accounts')") or ""
        )
    )
    assert "}} as acct_status," in (
        rewrite_model(bare, "acct_status", "account_status", "source('crm', 'accounts')") or ""
    )
    # a column that needs quoting: the quoted reference is rewritten and the chosen name
    # quoted as the adapter quotes; the output keeps its name; unquoted, `due-date` is a
    # subtraction, and a string that spells the name is text
    quoted = (
        'select\n    "due-date",\n    l."due-date" - 1 as d,\n    due-date,\n'
        "    '\"due-date\"' as s\nfrom l\n"
    )
    pick = "adapter.quote(upstream_renamed_column(source('ils', 'loans'), 'due_date', 'due-date'))"
    assert rewrite_model(quoted, "due-date", "due_date", "source('ils', 'loans')") == (
        f'select\n    {{{{ {pick} }}}} as "due-date",\n    l.{{{{ {pick} }}}} - 1 as d,\n'
        "    due-date,\n    '\"due-date\"' as s\nfrom l\n"
    )
    (tmp_path / "models").mkdir()
    (tmp_path / "models/stg_accounts.sql").write_text(model)
    fix = remedy(
        "rename",
        {"models/stg_accounts.sql": model},
        "acct_status",
        "account_status",
        "source('crm', 'accounts')",
        ("stg_accounts+",),
    )
    assert fix.action == "patch" and "macros/upstream_renamed_column.sql" in fix.files
    done = subprocess.run(
        ["git", "apply", "--check", "-"], input=fix.diff, cwd=tmp_path, text=True, check=False
    )
    assert done.returncode == 0
    unknown = remedy("rename", {"m.sql": "select 1"}, "a", "b", "ref('x')", ())
    assert unknown.action == "escalate" and "no model" in unknown.reason
    assert remedy("failing_check", {}, None, None, "", ()).action == "none"


def test_memory_naming_the_symptom_itself_concludes_on_it() -> None:
    g = renamed_estate()
    guard_check = FailingCheck("urn:li:assertion:g1", "schema contract", "acct_status", 2_000)
    g.views[SRC] = NodeView(SRC, "crm.accounts", (guard_check,), g.views[SRC].schema)
    inv = investigate(Trigger(SRC, guard_check, W), g, Memory(SRC, "acct_status", "rename"))
    top, score = inv.ranked[0]
    assert (top.cause, top.failure_class) == (SRC, "rename") and score.memory == 1.0


def test_losing_rows_is_named_a_volume_drop_even_when_the_newest_row_went_too() -> None:
    check = FailingCheck("urn:li:assertion:t1", "relationships", "account_id", 2_000)
    ts = "2026-11-28 10:00:00"
    gone = (
        Profile(900, 1000, (("created_at", ColumnProfile(0.0, None, ts)),)),
        Profile(1_500, 200, (("created_at", ColumnProfile(0.0, None, "2026-11-27 09:00:00")),)),
    )
    g = Graph(
        views={
            STG: NodeView(STG, "stg.accounts", (check,)),
            SRC: NodeView(SRC, "crm.accounts", profiles=gone),
        },
        ups={STG: (SRC,)},
        columns=(((SRC, "account_id"), (STG, "account_id")),),
    )
    inv = investigate(Trigger(STG, check, W), g)
    top, score = inv.ranked[0]
    assert (top.cause, top.failure_class) == (SRC, "volume_drop")
    assert score.support == 1.0  # a relation-level failure needs no column lineage


def test_a_checks_column_is_read_from_every_kind_of_datahub_assertion() -> None:
    from upstream_dagster.datahub.assertions import assertion_column, assertion_columns

    ds = "urn:li:dataset:(urn:li:dataPlatform:snowflake,shop.billing.invoices,PROD)"
    field_urn = f"urn:li:schemaField:({ds},amount_due)"
    native_field = {  # a DataHub field assertion (UI, Observe, the SDK)
        "type": "FIELD",
        "fieldAssertion": {
            "type": "FIELD_VALUES",
            "entity": ds,
            "fieldValuesAssertion": {"field": {"path": "amount_due", "type": "NUMBER"}},
        },
    }
    metric = {
        "type": "FIELD",
        "fieldAssertion": {
            "type": "FIELD_METRIC",
            "entity": ds,
            "fieldMetricAssertion": {"field": {"path": "amount_due"}, "metric": "NULL_COUNT"},
        },
    }
    expectations = {  # Great Expectations / older dbt sources: a column-scoped dataset assertion
        "type": "DATASET",
        "datasetAssertion": {"dataset": ds, "scope": "DATASET_COLUMN", "fields": [field_urn]},
    }
    custom = {"type": "CUSTOM", "customAssertion": {"entity": ds, "field": field_urn}}
    for info in (native_field, metric, expectations, custom):
        assert assertion_column(info) == "amount_due", info
    table = {"type": "VOLUME", "volumeAssertion": {"entity": ds}}
    two = {"type": "DATASET", "datasetAssertion": {"dataset": ds, "fields": [field_urn, "b"]}}
    assert assertion_column(table) is None and assertion_column(two) is None
    assert assertion_columns(two) == ["amount_due", "b"]
    # a dbt test of a `quote: true` column: dbt keeps the adapter's quotes in its column_name
    # and DataHub's dbt source copies them into the field; the schema holds the bare name
    for written, named in [
        ('"home branch"', "home branch"),
        ("`Amount`", "Amount"),
        ('"say ""hi"""', 'say "hi"'),
        ('""', '""'),
        ("plain", "plain"),
    ]:
        quoted = {
            "customAssertion": {"entity": ds, "field": f"urn:li:schemaField:({ds},{written})"}
        }
        assert assertion_column(quoted) == named, written


def test_a_change_seen_on_the_warehouse_twin_counts_once_at_its_first_sighting() -> None:
    from upstream_dagster.datahub.model import AspectVersion
    from upstream_dagster.datahub.probe import merged_schema_events, schema_events

    def schema(*cols: str) -> dict[str, Any]:
        return {"fields": [{"fieldPath": c, "nativeDataType": "NUMBER"} for c in cols]}

    dbt = [
        AspectVersion(1, 100, schema("id", "fee")),
        AspectVersion(2, 500, schema("id", "charge")),
    ]
    table = [
        AspectVersion(1, 90, schema("ID", "FEE")),
        AspectVersion(2, 300, schema("ID", "CHARGE")),
    ]
    warehouse_only = [
        AspectVersion(1, 90, schema("id", "fee")),
        AspectVersion(2, 300, schema("id")),
    ]
    events = merged_schema_events(schema_events("urn:x", dbt), [schema_events("urn:x", table)])
    late = [e for e in events if e.at_ms > 100]
    assert {(e.operation, e.column.lower()) for e in late} == {("REMOVE", "fee"), ("ADD", "charge")}
    assert all(e.at_ms == 300 for e in late)  # the twin saw it first
    own = schema_events("urn:x", [AspectVersion(1, 100, schema("id", "fee"))])
    alone = merged_schema_events(own, [schema_events("urn:x", warehouse_only)])
    assert [(e.operation, e.column) for e in alone if e.at_ms > 100] == [("REMOVE", "fee")]
    # a rename, its undo and the same rename again: the recurrence is a change of its own
    again = [
        AspectVersion(1, 100, schema("id", "fee")),
        AspectVersion(2, 200, schema("id", "charge")),
        AspectVersion(3, 300, schema("id", "fee")),
        AspectVersion(4, 400, schema("id", "charge")),
    ]
    both = merged_schema_events(schema_events("urn:x", again), [schema_events("urn:x", again)])
    assert [e.at_ms for e in both if (e.operation, e.column) == ("REMOVE", "fee")] == [200, 400]


# -- issue 17: diagnosis that holds on incidents nobody wrote a case for ----------------------
def test_a_tie_goes_to_the_upstream_only_when_it_explains_the_downstream() -> None:
    """Two hypotheses at one confidence are never ordered by name: the upstream one comes
    first when column lineage carries its failure to the other's; otherwise the verdict
    abstains naming the probe that would split them."""
    from upstream_dagster.reliability.evidence import Hypothesis
    from upstream_dagster.reliability.investigate import settle_ties
    from upstream_dagster.reliability.verdict import unsettled
    from upstream_dagster.reliability.walk import Investigation

    up, down = urn("zz.origin"), urn("aa.copy")  # by name, the downstream would sort first
    tied = Score(1, 1, 1, 0, 0, 0, 0, hard=True)

    def inv_for(edges_connect: bool) -> tuple[Investigation, tuple[Any, ...]]:
        inv = Investigation(Trigger(MART, FailingCheck("a", "c", "total", 2_000), W))
        inv.upstream = {MART: (down,), down: (up,)}
        inv.ranked = [
            (Hypothesis(down, "amount", "null_jump", (0,), (down, MART)), tied),
            (Hypothesis(up, "amt", "null_jump", (1,), (up, down, MART)), tied),
        ]
        edges = (((up, "amt"), (down, "amount")),) if edges_connect else ()
        return inv, edges

    explained, edges = inv_for(True)
    settle_ties(explained, edges)
    assert explained.ranked[0][0].cause == up and not explained.tie
    unexplained, edges = inv_for(False)
    settle_ties(unexplained, edges)
    assert "zz.origin" in unexplained.tie and "aa.copy" in unexplained.tie
    assert "query both" in unsettled(unexplained, tuple(unexplained.ranked))


def test_lost_rows_on_two_branches_tie_and_the_run_abstains_instead_of_picking_a_name() -> None:
    check = FailingCheck("urn:li:assertion:v", "row volume", None, 2_000)
    left, right = urn("crm.left_feed"), urn("crm.right_feed")
    g = Graph(
        views={
            MART: NodeView(MART, "mart", (check,), profiles=profiles("x", 0, 0, (100, 40))),
            left: NodeView(left, "left", profiles=profiles("x", 0, 0, (100, 40))),
            right: NodeView(right, "right", profiles=profiles("x", 0, 0, (100, 40))),
        },
        ups={MART: (left, right)},
    )
    inv = investigate(Trigger(MART, check, W), g)
    assert {h.cause for h, _ in inv.ranked[:2]} == {left, right}
    assert inv.tie and "left_feed" in inv.tie and "right_feed" in inv.tie


def _skipped_over_a_feed(peer_ran_ms: int | None, feed_rows: tuple[int, int] | None) -> Any:
    """STG (over the feed SRC, which keeps no run record) last ran before the window; INT ran
    inside it; PEER, the estate's other model over a feed, ran at ``peer_ran_ms``."""
    peer, peer_feed = urn("stg.invoices"), urn("billing.invoices_feed")
    check = FailingCheck("urn:li:assertion:m", "revenue", "total", 2_000)
    g = Graph(
        views={
            MART: NodeView(MART, "mart", (check,), last_run_ms=1_600),
            STG: NodeView(STG, "stg.accounts", last_run_ms=800),  # before the window
            INT: NodeView(INT, "int.accounts_daily", last_run_ms=1_500),
            SRC: NodeView(SRC, "crm.accounts", profiles=profiles("x", 0, 0, feed_rows))
            if feed_rows
            else NodeView(SRC, "crm.accounts"),
            peer: NodeView(peer, "stg.invoices", last_run_ms=peer_ran_ms),
            peer_feed: NodeView(peer_feed, "billing.invoices_feed"),
        },
        ups={MART: (STG, INT), STG: (SRC,), INT: (peer,), peer: (peer_feed,)},
    )
    return investigate(Trigger(MART, check, W), g)


def test_a_model_the_build_skipped_is_found_when_its_only_upstream_is_a_feed() -> None:
    """The feed keeps no run record: a skip shows as the feed's rows moving after the model's
    last build while the model was not rebuilt."""
    top = _skipped_over_a_feed(1_500, (1000, 1010)).ranked[0][0]
    assert (top.cause, top.failure_class) == (STG, "not_rebuilt")


def test_a_build_of_what_changed_is_not_a_skip_of_what_did_not() -> None:
    """A targeted build (dbt's state:modified+, Upstream's own refresh) rebuilt INT and the
    other model over a feed, not STG, whose feed did not move: nothing was skipped, and STG is
    not blamed (it was, at 1.00 beside a feed's renamed column and at 0.95 beside a feed's
    duplicated rows, when any other run in the window counted)."""
    for peer_ran in (600, 1_500):
        for feed in (None, (1000, 1000)):
            targeted = _skipped_over_a_feed(peer_ran, feed)
            assert all(h.failure_class != "not_rebuilt" for h, _ in targeted.ranked)


def test_a_snapshot_rerun_on_an_unchanged_source_makes_no_model_stale() -> None:
    """A snapshot reads the clock, so every refresh runs it; run on a source that did not
    change it writes nothing new, and the model built from it (STG here, last built before the
    window) has nothing to be rebuilt with: not blamed (a blind case blamed it at 1.00 beside
    a price feed's real change). Its own rows moving while it did not run is still a skip."""
    snap = urn("snapshots.accounts_snapshot")
    check = FailingCheck("urn:li:assertion:m", "revenue", "total", 2_000)

    def ranked(stg_rows: tuple[int, int]) -> Any:
        g = Graph(
            views={
                MART: NodeView(MART, "mart", (check,), last_run_ms=1_600),
                STG: NodeView(STG, "stg.accounts", last_run_ms=800,
                              profiles=profiles("x", 0, 0, stg_rows)),
                snap: NodeView(snap, "snapshots.accounts_snapshot", last_run_ms=1_500,
                               profiles=profiles("x", 0, 0)),  # the same rows, re-run
            },
            ups={MART: (STG,), STG: (snap,)},
        )  # fmt: skip
        return investigate(Trigger(MART, check, W), g).ranked

    assert all(h.failure_class != "not_rebuilt" for h, _ in ranked((100, 100)))
    top = ranked((100, 60))[0][0]
    assert (top.cause, top.failure_class) == (STG, "not_rebuilt")


def test_a_node_nothing_was_observed_on_does_not_make_its_downstream_an_origin() -> None:
    """No profile, no check, no schema change: unknown, not healthy. The lost rows below it
    are downstream of the rename above it, not a second origin."""
    check = FailingCheck("urn:li:assertion:v", "row volume", None, 2_000)
    g = renamed_estate()
    g.views[STG] = NodeView(STG, "stg.accounts")  # nothing observed
    g.views[MART] = NodeView(MART, "mart", (check,), profiles=profiles("x", 0, 0, (100, 40)))
    inv = investigate(Trigger(MART, check, W), g)
    assert [h.cause for h, _ in inv.ranked] == [SRC]


def test_a_join_key_feeds_every_column_of_the_model_that_joins_on_it() -> None:
    """Column lineage connects projected columns only: NULLs in a join key reach the mart's
    total through the rows the join keeps, and that counts as lineage (not half support)."""
    check = FailingCheck("urn:li:assertion:t", "total not zero", "total", 2_000)

    def estate(row_edges: bool) -> Graph:
        return Graph(
            views={
                MART: NodeView(MART, "mart", (check,), profiles=profiles("total", 0, 0, (90, 40))),
                SRC: NodeView(SRC, "crm.accounts", profiles=profiles("acct_key", 0.0, 0.7)),
            },
            ups={MART: (SRC,)},
            columns=(((SRC, "amount"), (MART, "total")),)
            + ((((SRC, "ACCT_KEY"), (MART, "*")),) if row_edges else ()),
        )

    with_rows = investigate(Trigger(MART, check, W), estate(True))
    without = investigate(Trigger(MART, check, W), estate(False))
    top, score = with_rows.ranked[0]
    assert (top.cause, top.column) == (SRC, "acct_key")
    assert any("feeds" in with_rows.ledger[i].claim for i in top.cites)
    assert score.confidence > without.ranked[0][1].confidence


def test_a_build_error_naming_the_column_an_upstream_renamed_is_cited() -> None:
    """The loud failure: the model cannot build, dbt's error names the old column, the feed's
    timeline shows the rename. The error and the change are one event."""
    error = (
        'Binder Error: Referenced column "acct_status" not found in FROM clause! '
        'Candidate bindings: "account_status"'
    )
    build = FailingCheck("urn:li:assertion:b", "dbt build of the model", None, 2_000, error)
    g = renamed_estate()
    g.views[STG] = NodeView(STG, "stg.accounts", (build,))
    inv = investigate(Trigger(STG, build, W), g)
    top, score = inv.ranked[0]
    assert (top.cause, top.column, top.failure_class) == (SRC, "acct_status", "rename")
    named = [inv.ledger[i] for i in top.cites if inv.ledger[i].kind == "run_record"]
    assert named and "names acct_status" in named[0].claim
    assert score.diversity == 1.0


def test_row_columns_are_the_ones_that_decide_which_rows_a_query_returns() -> None:
    from upstream_dagster.reliability.sqlcols import row_columns

    sql = """
        with recent as (select * from raw.events where kind <> 'test')
        select a.region, count(*) as n
        from recent as e join dim.accounts as a on e.acct_key = a.acct_key
        left join dim.plans using (plan_code)
        group by 1
        having sum(e.amount) > 0
        qualify row_number() over (partition by a.region order by n desc) = 1
    """
    assert row_columns(sql) == {"kind", "acct_key", "plan_code", "region", "amount", "n"}
    assert row_columns("select * from (((") == frozenset()


def test_rows_that_left_one_day_are_explained_by_the_column_failure_of_the_whole_table() -> None:
    """NULLs in a table's date column move its rows out of their day: the day's count drops
    while the table's does not. The column's NULLs are the failure, not lost rows."""
    check = FailingCheck("urn:li:assertion:v", "rows per day", None, 2_000)
    day_before = Profile(900, 40, (("booked_at", ColumnProfile(0.0, None)),), "booked_at=d")
    day_after = Profile(1_500, 10, (("booked_at", ColumnProfile(0.0, None)),), "booked_at=d")
    whole = profiles("booked_at", 0.0, 0.6)
    g = Graph(
        views={
            MART: NodeView(MART, "mart", (check,)),
            SRC: NodeView(SRC, "crm.accounts", profiles=(*whole, day_before, day_after)),
        },
        ups={MART: (SRC,)},
    )
    top = investigate(Trigger(MART, check, W), g).ranked[0][0]
    assert (top.cause, top.column, top.failure_class) == (SRC, "booked_at", "null_jump")


def test_a_freshness_failure_is_named_by_what_the_profile_recorded_not_by_the_check() -> None:
    fresh = FailingCheck("urn:li:assertion:f", "source freshness", None, 2_000, freshness=True)
    g = Graph(
        views={SRC: NodeView(SRC, "crm.accounts", (fresh,), profiles=profiles("loaded", 0, 0.9))},
        ups={},
    )
    top = investigate(Trigger(SRC, fresh, W), g).ranked[0][0]
    assert (top.column, top.failure_class) == ("loaded", "null_jump")


@pytest.mark.parametrize(
    "old,new,wide",
    [
        ("INTEGER", "BIGINT", True),
        ("smallint", "INTEGER", True),
        ("FLOAT", "DOUBLE", True),
        ("DECIMAL(12,2)", "DECIMAL(14, 2)", True),
        ("VARCHAR(20)", "VARCHAR", True),
        ("BIGINT", "INTEGER", False),  # narrower: values can be cut
        ("DECIMAL(12,2)", "DECIMAL(12,0)", False),  # loses the cents
        ("INTEGER", "VARCHAR", False),  # another family: consumers can tell
        ("", "BIGINT", False),  # the old type unknown: not assumed harmless
    ],
)
def test_a_widened_type_keeps_every_value_and_is_no_finding(old: str, new: str, wide: bool) -> None:
    from upstream_dagster.reliability.evidence import Ledger
    from upstream_dagster.reliability.health import diagnose, widened

    assert widened(old, new) is wide
    event = SchemaEvent(1_500, "MODIFY", "amount", new, None, old)
    (change,) = correlate((event,))
    assert change.kind == ("type_widened" if wide else "type_change")
    found = diagnose(NodeView(SRC, "crm.accounts", schema=(event,)), W, Ledger())
    assert [f.failure_class for f in found] == ([] if wide else ["type_change"])


def test_the_parent_key_of_a_relationships_test_connects_like_the_checked_column() -> None:
    """A relationships test on the child's key fails because the parent's key went NULL: the
    parent side is connected to the symptom, so its support is not halved."""
    parent, feed = urn("stg.invoices"), urn("billing.invoices_feed")
    check = FailingCheck("urn:li:assertion:rel", "relationships", "inv_key", 2_000)

    def run(with_parent_column: bool) -> Any:
        g = Graph(
            views={
                MART: NodeView(MART, "mart", (check,)),
                parent: NodeView(parent, "stg.invoices", profiles=profiles("inv_key", 0, 0.5)),
                feed: NodeView(feed, "feed", profiles=profiles("inv_key", 0, 0.5)),
            },
            ups={parent: (feed,)},
            columns=(((feed, "inv_key"), (parent, "inv_key")),),
        )
        columns = ((parent, "inv_key"),) if with_parent_column else ()
        return investigate(Trigger(MART, check, W, (parent,), columns), g).ranked[0]

    (top, connected), (_, unconnected) = run(True), run(False)
    assert (top.cause, top.column) == (feed, "inv_key")
    assert connected.support == 1.0 and unconnected.support == 0.5


def test_the_failing_check_reported_on_its_other_table_is_no_hypothesis() -> None:
    """DataHub's dbt source reports a relationships test on both tables it reads: the parent
    then carries the symptom's own failure and nothing else, which explains nothing."""
    rel = FailingCheck("urn:li:assertion:rel", "relationships", "acct_key", 2_000)
    other_side = FailingCheck("urn:li:assertion:rel-2", "relationships", "acct_key", 2_000)
    parent = urn("stg.accounts_dim")
    g = Graph(
        views={
            MART: NodeView(MART, "mart", (rel,), profiles=profiles("acct_key", 0, 0.5)),
            parent: NodeView(parent, "stg.accounts_dim", (other_side,)),
            SRC: NodeView(SRC, "crm.accounts", profiles=profiles("acct_key", 0, 0.5)),
        },
        ups={MART: (SRC,)},
        columns=(((SRC, "acct_key"), (MART, "acct_key")),),
    )
    inv = investigate(Trigger(MART, rel, W, (parent,), ((parent, "acct_key"),)), g)
    assert [h.cause for h, _ in inv.ranked] == [SRC]


@pytest.mark.slow
@pytest.mark.parametrize(
    "sql",
    [
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r",
        "SELECT count(*) FROM s.t AS a, s.t AS b, s.t AS c, s.t AS d",
    ],
    ids=["endless-recursion", "runaway-join"],
)
def test_a_guarded_query_that_runs_away_is_stopped_and_named(
    sql: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import duckdb

    from upstream_dagster.warehouse import duckdb_warehouse as dw

    path = tmp_path / "w.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE SCHEMA s; CREATE TABLE s.t AS SELECT range AS a FROM range(100000)")
    con.close()
    monkeypatch.setattr(dw, "QUERY_SECONDS", 1.0)
    ran, rows, why = dw.forensic(path, sql, {"s.t"})
    assert ran is not None and rows == []
    assert why.startswith("the query ran longer than 1s and was stopped")


@pytest.mark.parametrize(
    "sql",
    [
        "WITH x AS (DELETE FROM s.t RETURNING *) SELECT * FROM x",
        "WITH x AS (UPDATE s.t SET a = 0 RETURNING *) SELECT * FROM x",
        "SELECT 'unclosed FROM s.t",
        "SELECT a FROM s.t /* unclosed",
    ],
    ids=["delete-in-cte", "update-in-cte", "unclosed-quote", "unclosed-comment"],
)
def test_the_guard_refuses_writes_hidden_in_a_cte_and_unreadable_sql_without_raising(
    sql: str,
) -> None:
    checked = guard(sql, {"s.t"})
    assert checked.refused and checked.reason


def test_an_incident_key_names_the_dataset_and_the_time_and_still_reads_old_keys() -> None:
    """Partitions were opaque (`upstream-3d5b...@1796093310647`): the key now reads as the
    dataset and the UTC time, exact by the assertion id at its end; keys of the old form still
    name the same event, so a sensor does not open a known incident twice."""
    from upstream_dagster.datahub.incidents import incident_key, parse_key, same_event
    from upstream_dagster.datahub.model import AssertionRun

    dataset = "urn:li:dataset:(urn:li:dataPlatform:dbt,warehouse.marts.fct_orders,PROD)"
    run = AssertionRun("urn:li:assertion:a94206c5", dataset, 1796125218379, "FAILURE")
    key = incident_key(run)
    assert key == "marts.fct_orders@2026-12-01T11:40:18.379Z~a94206c5"
    assert parse_key(key) == ("urn:li:assertion:a94206c5", 1796125218379)
    assert same_event("a94206c5@1796125218379") == same_event(key)
    assert same_event("not a key") is None
    odd = AssertionRun("urn:li:assertion:x", "urn:li:dataset:(p,a b...c,PROD)", 5, "FAILURE")
    assert "..." not in incident_key(odd) and " " not in incident_key(odd)
    assert parse_key(incident_key(odd)) == ("urn:li:assertion:x", 5)


def test_the_sensor_and_the_datahub_action_name_a_check_alike() -> None:
    """The sensor reads assertionInfo as an aspect, the Action through GraphQL: one event must
    get one partition, so both name the check the same way (a dbt test, an Upstream monitor)."""
    from upstream_dagster.datahub.incidents import (
        check_from_graphql,
        check_name,
        incident_key,
        parse_key,
    )
    from upstream_dagster.datahub.model import AssertionRun

    col = "urn:li:schemaField:(urn:li:dataset:(urn:li:dataPlatform:dbt,w.marts.agg,PROD),net_rev)"
    monitor_aspect = {
        "description": "Upstream monitor revenue_not_zero: zero values on net_rev",
        "customProperties": {"upstream_monitor": "revenue_not_zero", "upstream_rule": "zero"},
        "customAssertion": {"type": "Upstream monitor: zero_values", "field": col},
    }
    monitor_gql = {
        "description": monitor_aspect["description"],
        "customProperties": [
            {"key": "upstream_monitor", "value": "revenue_not_zero"},
            {"key": "upstream_rule", "value": "zero"},
        ],
        "customAssertion": {"type": "Upstream monitor: zero_values", "field": {"path": "net_rev"}},
    }
    assert (
        check_name(monitor_aspect) == check_from_graphql(monitor_gql) == "revenue_not_zero.net_rev"
    )
    dbt_aspect = {"customProperties": {"dbt_unique_id": "test.p.not_null_orders_id.9f"}}
    dbt_gql = {
        "customProperties": [{"key": "dbt_unique_id", "value": "test.p.not_null_orders_id.9f"}]
    }
    assert check_name(dbt_aspect) == check_from_graphql(dbt_gql) == "not_null_orders_id"
    run = AssertionRun("urn:li:assertion:a1", "urn:li:dataset:(p,w.marts.agg,PROD)", 7, "FAILURE")
    key = incident_key(run, "revenue_not_zero.net_rev")
    assert key.startswith("marts.agg:revenue_not_zero.net_rev@1970-01-01T00:00:00.007Z~")
    assert parse_key(key) == ("urn:li:assertion:a1", 7)


def test_a_louder_burst_off_the_checked_columns_does_not_hide_the_shift_that_feeds_them() -> None:
    """One feed, two changes: most of a column nothing checked reads went NULL, and the column
    that feeds the checked total shifted. The node's failure is the one that reaches the check."""
    check = FailingCheck("urn:li:assertion:t", "total within range", "total", 2_000)
    before = Profile(900, 100, (("promo", ColumnProfile(0.0)), ("disc", ColumnProfile(0, 5.0))))
    after = Profile(1_500, 100, (("promo", ColumnProfile(0.9)), ("disc", ColumnProfile(0, 50.0))))
    g = Graph(
        views={
            MART: NodeView(MART, "mart", (check,), profiles=profiles("total", 0, 0)),
            SRC: NodeView(SRC, "crm.accounts", profiles=(before, after)),
        },
        ups={MART: (SRC,)},
        columns=(((SRC, "disc"), (MART, "total")), ((SRC, "promo"), (MART, "promo"))),
    )
    top, score = investigate(Trigger(MART, check, W), g).ranked[0]
    assert (top.cause, top.column, top.failure_class) == (SRC, "disc", "value_shift")
    g.columns = (((SRC, "promo"), (MART, "promo")),)  # nothing feeds the total: no reach
    unlinked = investigate(Trigger(MART, check, W), g).ranked
    assert not unlinked or unlinked[0][1].confidence < score.confidence


def test_a_shifted_day_column_is_the_failure_not_what_moved_inside_its_days() -> None:
    """A model's dates moved two days with as many rows (a code change), so its last complete
    day now holds other rows: a currency 'vanished' from that day. The day's change is the shift
    seen from inside the day; the node's failure is the date column that moved."""
    check = FailingCheck("urn:li:assertion:t", "not_null amount_usd", "amount_usd", 2_000)

    def table(lo: str, hi: str, at: int) -> Profile:
        codes = ColumnProfile(0.0, values=(("eur", 60), ("gbp", 40)))
        return Profile(at, 100, (("issued_on", ColumnProfile(0.0, None, hi, None, (), lo)),
                                 ("currency", codes)))  # fmt: skip

    def day(codes: tuple[tuple[str, int], ...], at: int) -> Profile:
        return Profile(at, 5, (("currency", ColumnProfile(0.0, values=codes)),),
                       "issued_on=2026-11-28")  # fmt: skip

    shifted = (
        table("2026-08-02", "2026-11-28", 900),
        table("2026-08-04", "2026-11-30", 1_500),
        day((("eur", 3), ("gbp", 2)), 900),
        day((("eur", 5),), 1_500),
    )
    g = Graph(
        views={
            MART: NodeView(MART, "mart", (check,), profiles=profiles("amount_usd", 0, 0.2)),
            OTHER: NodeView(OTHER, "billing.invoices", profiles=shifted),
        },
        ups={MART: (OTHER,)},
        columns=(
            ((OTHER, "currency"), (MART, "amount_usd")),
            ((OTHER, "issued_on"), (MART, "amount_usd")),
        ),  # fmt: skip
    )
    top, _ = investigate(Trigger(MART, check, W), g).ranked[0]
    assert (top.cause, top.column, top.failure_class) == (OTHER, "issued_on", "value_shift")


def test_an_approved_reload_that_leaves_the_check_red_says_what_resolves_it(
    tmp_path: Path,
) -> None:
    """A reload is the feed owner's fix: approving it rebuilds, but nothing the check reads
    changes until the data is delivered again, so the incident stays open. What the reviewer
    reads then says what resolves it, not only that the check has not passed."""
    from upstream_dagster.datahub.lite import LiteGraph
    from upstream_dagster.datahub.signals import report_run
    from upstream_dagster.evaluation.replay import replay
    from upstream_dagster.services.incident_fix import check_passes
    from upstream_dagster.spec import load_estate
    from upstream_dagster.spec.urns import short
    from upstream_dagster.state import records

    root = Path(__file__).resolve().parent.parent
    spec = load_estate(root / "estate.yaml")

    def verdict(case: str) -> Any:
        record = records.load(root / f"evals/records/{case}.json")
        return replay(record["occurrences"][0]["investigation"], spec)

    stale, renamed = verdict("stale_storefront"), verdict("vendor_rename")
    assert stale.remedy.action == "reload" and renamed.remedy.action == "patch"
    graph = LiteGraph(tmp_path / "lite.sqlite", create=True)
    passed, said = check_passes(graph, stale)  # the rebuild did not run the check again
    assert not passed and "has not run since the fix" in said
    assert f"Once {short(stale.cause)} is delivered again" in said
    assert "launch incident_resolution_job" in said
    after = stale.window.symptom_ms + 60_000
    report_run(graph, stale.check.assertion, stale.symptom, False, {}, after, "r1")
    passed, said = check_passes(graph, stale)  # it ran, on the same data: still red
    assert not passed and ": FAILURE; the fix is the feed's" in said
    report_run(graph, renamed.check.assertion, renamed.symptom, False, {}, after, "r2")
    passed, said = check_passes(graph, renamed)  # a patch that did not help blames no feed
    assert not passed and said.endswith("FAILURE")
