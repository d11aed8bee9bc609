"""Diagnosis that knows when it does not know, on plain records: a change that does not reach
what the check measures is a coincidence; a check that fails again on unchanged data is real,
one that passes is flaky; a small loss in a lookup is found by the rows that lost their match;
duplicates by the keys that repeat; a model is a cause only if its code or inputs changed; the
remedy matches the class. Names here are not the demo's."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from upstream_dagster.reliability.evidence import Ledger, Score
from upstream_dagster.reliability.grain import join_keys
from upstream_dagster.reliability.health import (
    CheckRun,
    ColumnProfile,
    FailingCheck,
    NodeView,
    Profile,
    SchemaEvent,
    Window,
    diagnose,
)
from upstream_dagster.reliability.investigate import Trigger, investigate
from upstream_dagster.reliability.remediation import remedy
from upstream_dagster.reliability.rewrite import rewrite_model
from upstream_dagster.reliability.sqlguard import guard
from upstream_dagster.reliability.verdict import Sim, flaky, rescore
from upstream_dagster.reliability.walk import ROWS
from upstream_dagster.spec.urns import relation_of


def urn(name: str) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:dbt,wh.{name},PROD)"


FEED, LOOKUP, STG, MART = urn("raw.orders"), urn("ref.rates"), urn("stg.orders"), urn("mart.rev")
W = Window(last_good_ms=1_000, symptom_ms=2_000)


def col(null: float = 0.0, mean: float | None = 5.0, distinct: int | None = None,
        values: tuple[tuple[str, int], ...] = ()) -> ColumnProfile:  # fmt: skip
    return ColumnProfile(null, mean, None, distinct, values)


def two(rows: tuple[int, int], **cols: tuple[ColumnProfile, ColumnProfile]) -> tuple[Profile, ...]:
    """The last healthy build's profile and the symptom build's."""
    return (
        Profile(900, rows[0], tuple((c, p[0]) for c, p in cols.items())),
        Profile(1_500, rows[1], tuple((c, p[1]) for c, p in cols.items())),
    )


@dataclass
class Graph:
    views: dict[str, NodeView]
    ups: dict[str, tuple[str, ...]]
    columns: tuple[Any, ...] = ()
    answers: dict[str, list[Any]] = field(default_factory=dict)  # a word in the SQL -> its rows
    asked: list[str] = field(default_factory=list)
    reads: int = 0

    def upstreams(self, u: str) -> tuple[str, ...]:
        return self.ups.get(u, ())

    def observe(self, urns: tuple[str, ...], with_runs: bool = True) -> dict[str, NodeView]:
        return {u: self.views.get(u, NodeView(u, u)) for u in urns}

    def column_edges(self) -> tuple[Any, ...]:
        return self.columns

    def relation(self, urn: str) -> str:
        return relation_of(urn)

    def forensic(self, sql: str, relations: set[str]) -> tuple[str | None, list[Any], str]:
        checked = guard(sql, relations)
        if checked.refused:
            return None, [], checked.reason
        self.asked.append(sql)
        rows = next((r for word, r in self.answers.items() if word in sql), [(0,)])
        return checked.sql, rows, ""


def timed_out(check: str, column: str | None, kind: str = "zero_values") -> FailingCheck:
    return FailingCheck(f"urn:li:assertion:{check}", check, column, 2_000, "check timed out",
                        kind=kind)  # fmt: skip


def history(check: str, last: bool = False) -> tuple[CheckRun, ...]:
    return (
        CheckRun(f"urn:li:assertion:{check}", 500, True),
        CheckRun(f"urn:li:assertion:{check}", 900, True),
        CheckRun(f"urn:li:assertion:{check}", 2_000, last, "check timed out"),
    )


def unchanged(**cols: ColumnProfile) -> tuple[Profile, ...]:
    return two((100, 100), **{c: (p, p) for c, p in cols.items()})


def test_a_rename_off_the_checked_columns_path_beside_a_spurious_failure_is_a_coincidence() -> None:
    check = timed_out("revenue_present", "revenue")
    g = Graph(
        views={
            MART: NodeView(
                MART,
                "mart.rev",
                (check,),
                profiles=unchanged(revenue=col()),
                runs=history("revenue_present"),
            ),  # fmt: skip
            FEED: NodeView(
                FEED,
                "raw.orders",
                schema=(
                    SchemaEvent(500, "ADD", "channel", "VARCHAR"),
                    SchemaEvent(1_200, "REMOVE", "channel", "VARCHAR"),
                    SchemaEvent(1_200, "ADD", "channel_v2", "VARCHAR"),
                ),
            ),  # fmt: skip
        },
        ups={MART: (STG,), STG: (FEED,)},
        columns=(
            ((FEED, "amount"), (STG, "amount")),
            ((STG, "amount"), (MART, "revenue")),
            ((FEED, "channel"), (STG, "channel")),
        ),
    )
    inv = investigate(Trigger(MART, check, W), g)
    (top, score), *_ = inv.ranked
    assert (top.cause, top.column, top.failure_class) == (FEED, "channel", "rename")
    assert score.coincidence == 1.0 and score.confidence < 0.2
    why = inv.relevance[(FEED, "channel", "rename")].why
    assert "feeds none of mart.rev.revenue" in why and "did not change" in why


def test_a_null_burst_no_path_links_to_a_row_count_check_is_a_coincidence() -> None:
    check = timed_out("row_volume", None, "volume")
    g = Graph(
        views={
            MART: NodeView(MART, "mart.rev", (check,), profiles=unchanged(note=col(mean=None))),
            FEED: NodeView(FEED, "raw.orders", profiles=two((100, 100), note=(col(0.0), col(0.6)))),
        },
        ups={MART: (FEED,)},
        columns=(((FEED, "note"), (MART, "note")), ((FEED, "day"), (MART, ROWS))),
    )
    inv = investigate(Trigger(MART, check, W), g)
    top, score = inv.ranked[0]
    assert (top.cause, top.column, top.failure_class) == (FEED, "note", "null_jump")
    assert score.coincidence == 1.0 and score.confidence < 0.2


def test_a_change_that_reaches_the_check_and_moved_its_data_is_no_coincidence() -> None:
    check = FailingCheck("urn:li:assertion:r", "revenue_present", "revenue", 2_000, "0 on day",
                         kind="zero_values")  # fmt: skip
    g = Graph(
        views={
            MART: NodeView(
                MART, "mart.rev", (check,), profiles=two((10, 10), revenue=(col(0.0), col(0.9)))
            ),  # fmt: skip
            FEED: NodeView(
                FEED, "raw.orders", profiles=two((100, 100), amount=(col(0.0), col(0.9)))
            ),
        },
        ups={MART: (FEED,)},
        columns=(((FEED, "amount"), (MART, "revenue")),),
    )
    inv = investigate(Trigger(MART, check, W), g)
    top, score = inv.ranked[0]
    assert (top.cause, top.column) == (FEED, "amount") and score.coincidence == 0.0
    assert score.confidence >= 0.7


RATES_SQL = (
    'SELECT i.id, r.rate FROM "wh"."raw"."orders" AS i LEFT JOIN "wh"."ref"."rates" AS r '
    "ON r.currency = i.currency AND r.day = i.ordered_on"
)


def test_three_rows_missing_from_a_lookup_are_found_by_the_rows_that_lost_their_match() -> None:
    check = FailingCheck("urn:li:assertion:nn", "not_null_stg_orders_amount_usd", "amount_usd",
                         2_000, "Got 30 results", kind="not_null")  # fmt: skip
    g = Graph(
        views={
            STG: NodeView(
                STG,
                "stg.orders",
                (check,),
                profiles=two((1000, 1000), amount_usd=(col(0.0), col(0.03))),
                code=((500, "select ... from {{ ref('orders') }}"),),
                compiled=RATES_SQL,
            ),  # fmt: skip
            LOOKUP: NodeView(LOOKUP, "ref.rates", profiles=two((450, 447), rate=(col(), col()))),
            FEED: NodeView(FEED, "raw.orders", profiles=unchanged(currency=col(mean=None))),
        },
        ups={STG: (FEED, LOOKUP)},
        columns=(
            ((LOOKUP, "rate"), (STG, "amount_usd")),
            ((FEED, "amount"), (STG, "amount_usd")),
            ((LOOKUP, "currency"), (STG, ROWS)),
        ),
        answers={"NOT EXISTS": [("eur", "2026-11-24", 10), ("eur", "2026-11-25", 12)]},
    )
    inv = investigate(Trigger(STG, check, W), g)
    top, score = inv.ranked[0]
    assert (top.cause, top.failure_class) == (LOOKUP, "volume_drop") and score.grain == 1.0
    assert score.confidence >= 0.7
    claims = " ".join(inv.ledger[i].claim for i in top.cites)
    assert "22 row(s) of raw.orders find no match in ref.rates" in claims
    own = [(h, s) for h, s in inv.ranked if h.cause == STG]
    assert own and own[0][0].derived and own[0][1].confidence < score.confidence


def test_one_percent_duplicated_in_a_feed_is_found_by_the_keys_that_repeat() -> None:
    check = FailingCheck("urn:li:assertion:u", "unique_stg_orders_id", "id", 2_000,
                         "Got 12 results", kind="unique")  # fmt: skip
    g = Graph(
        views={
            STG: NodeView(
                STG,
                "stg.orders",
                (check,),
                code=((500, "select * from x"),),
                profiles=two((1000, 1012), id=(col(distinct=1000), col(distinct=1000))),
            ),
            FEED: NodeView(
                FEED,
                "raw.orders",
                profiles=two((1000, 1012), id=(col(distinct=1000), col(distinct=1000))),
            ),
        },  # fmt: skip
        ups={STG: (FEED,)},
        columns=(((FEED, "id"), (STG, "id")),),
        answers={"HAVING": [(12,)]},
    )
    inv = investigate(Trigger(STG, check, W), g)
    top, score = inv.ranked[0]
    assert (top.cause, top.failure_class) == (FEED, "volume_jump") and score.grain == 1.0
    assert score.confidence >= 0.7


def test_a_model_whose_code_changed_is_the_cause_and_its_remedy_reverts_it() -> None:
    check = FailingCheck("urn:li:assertion:v", "volume", None, 2_000, "-60%", kind="volume")
    g = Graph(
        views={
            MART: NodeView(MART, "mart.rev", (check,), profiles=two((100, 40))),
            STG: NodeView(
                STG,
                "stg.orders",
                profiles=two((100, 40)),
                code=(
                    (500, "select * from {{ ref('o') }}"),
                    (1_300, "select * from {{ ref('o') }} where id % 10 < 4"),
                ),
            ),
            FEED: NodeView(FEED, "raw.orders", profiles=two((100, 100))),
        },  # fmt: skip
        ups={MART: (STG,), STG: (FEED,)},
    )
    inv = investigate(Trigger(MART, check, W), g)
    top, _ = inv.ranked[0]
    assert top.cause == STG and top.code_changed and top.failure_class == "volume_drop"
    fix = remedy(top.failure_class, {}, None, None, "", ("orders+",),
                 revert=("models/orders.sql", "select 2\n", "select 1\n"))  # fmt: skip
    assert fix.action == "revert" and "-select 2" in fix.diff and "+select 1" in fix.diff


def test_a_model_whose_data_moved_while_its_code_and_inputs_did_not_is_no_confident_cause() -> None:
    check = FailingCheck(
        "urn:li:assertion:z", "amount present", "amount", 2_000, "0", kind="zero_values"
    )
    g = Graph(
        views={
            STG: NodeView(
                STG,
                "stg.orders",
                (check,),
                code=((500, "select 1"),),
                profiles=two((100, 100), amount=(col(0.0), col(0.5))),
            ),
            FEED: NodeView(FEED, "raw.orders", profiles=unchanged(amount=col())),
        },  # fmt: skip
        ups={STG: (FEED,)},
        columns=(((FEED, "amount"), (STG, "amount")),),
    )
    inv = investigate(Trigger(STG, check, W), g)
    top, score = inv.ranked[0]
    assert top.cause == STG and top.derived and score.confidence < 0.7


def _inv_with_flaky_check() -> Any:
    check = timed_out("revenue_present", "revenue")
    g = Graph(
        views={MART: NodeView(MART, "mart.rev", (check,), runs=history("revenue_present")),
               FEED: NodeView(FEED, "raw.orders",
                              profiles=two((100, 100), amount=(col(0.0), col(0.9))))},
        ups={MART: (FEED,)},
        columns=(((FEED, "amount"), (MART, "revenue")),),
    )  # fmt: skip
    return investigate(Trigger(MART, check, W), g)


def test_a_check_that_passes_again_on_the_same_data_is_named_flaky_with_its_history() -> None:
    inv = _inv_with_flaky_check()
    sim = Sim(False, False, "no simulation for a reload", True, True, "again on the same data: ok")
    ranked = rescore(inv, sim)
    assert all(s.spurious == 1.0 and s.confidence < 0.2 for _, s in ranked)
    said = flaky(inv, sim)
    assert "is flaky" in said and "3 recorded run(s): 2 passed, 1 failed" in said
    assert "check timed out" in said


def test_a_fix_is_verified_only_when_the_check_stays_red_without_it() -> None:
    assert Sim(True, True, "pass", True, False, "fail").verified
    assert not Sim(True, True, "pass", True, True, "pass too").verified  # passes anyway
    assert not Sim(True, True, "pass").verified  # no control: not verified
    inv = _inv_with_flaky_check()
    reproduced = rescore(inv, Sim(False, False, "", True, False, "fails again"))
    # the failure reproduces with nothing changed: the data moved before, not a coincidence
    assert reproduced[0][1].coincidence == 0.0 and reproduced[0][1].spurious == 0.0


def test_a_small_change_is_a_minor_finding_and_makes_no_node_unhealthy() -> None:
    view = NodeView(
        LOOKUP,
        "ref.rates",
        profiles=two(
            (450, 447),
            currency=(
                col(mean=None, values=(("eur", 150), ("usd", 150))),
                col(mean=None, values=(("EUR", 10), ("eur", 140), ("usd", 147))),
            ),
        ),  # fmt: skip
    )
    found = {(f.failure_class, f.column): f for f in diagnose(view, W, Ledger())}
    assert found[("volume_drop", None)].minor
    assert not found[("value_change", "currency")].minor  # a value appeared


def test_join_keys_are_read_from_the_compiled_sql() -> None:
    assert join_keys(RATES_SQL, "ref.rates") == (
        "raw.orders",
        [("currency", "currency"), ("day", "ordered_on")],
    )
    using = 'SELECT * FROM "wh"."a"."s" AS s JOIN "wh"."b"."p" AS p USING (plan)'
    assert join_keys(using, "b.p") == ("a.s", [("plan", "plan")])


def test_a_loud_rename_is_patched_where_the_model_uses_the_column_in_expressions() -> None:
    model = (
        "select\n    id,\n    trim(name) as name,\n    t.name as other\nfrom {{ src }}\n"
        "where name is not null\n"
    )
    out = rewrite_model(model, "name", "full_name", "source('crm', 'a')")
    assert out is not None
    choice = "{{ upstream_renamed_column(source('crm', 'a'), 'full_name', 'name') }}"
    assert f"trim({choice}) as name" in out and f"where {choice} is not null" in out
    assert f"t.{choice} as other" in out and "as name," in out  # output names are kept


def test_score_features_follow_their_weights() -> None:
    s = Score(1, 1, 1, 0, 1, 1, 0, True, 1.0)
    assert replace(s, coincidence=1.0).confidence < s.confidence
    assert replace(s, spurious=1.0).confidence < s.confidence
    assert replace(s, grain=1.0).confidence > s.confidence


def test_a_checked_column_lineage_lost_its_edges_into_is_no_proof_of_a_coincidence() -> None:
    """DataHub holds the mart's table-level upstream but, after a re-ingestion, no column
    lineage into its checked column: the feed's change may reach it, and the data moved, so
    it is concluded, not called a coincidence."""
    check = FailingCheck("urn:li:assertion:r", "revenue_present", "revenue", 2_000, "0 on day",
                         kind="zero_values")  # fmt: skip
    g = Graph(
        views={
            MART: NodeView(
                MART, "mart.rev", (check,), profiles=two((10, 10), revenue=(col(), col(0.0, 0.0)))
            ),  # fmt: skip
            STG: NodeView(
                STG, "stg.orders", profiles=two((100, 100), amount=(col(), col(0.0, 0.0)))
            ),
            FEED: NodeView(
                FEED, "raw.orders", profiles=two((100, 100), price=(col(), col(0.0, 0.0)))
            ),
        },
        ups={MART: (STG,), STG: (FEED,)},
        columns=(
            ((FEED, "price"), (STG, "amount")),
            ((STG, "day"), (MART, ROWS)),  # only the rows the mart groups by are known
            ((MART, "revenue"), (MART, "revenue")),  # its warehouse twin
        ),
        answers={"SELECT": [(100, 0.0)]},  # the warehouse: 100 rows, mean price 0
    )
    inv = investigate(Trigger(MART, check, W), g)
    top, score = inv.ranked[0]
    assert (top.cause, top.column) == (FEED, "price") and score.coincidence == 0.0
    assert score.confidence >= 0.7


def test_a_column_an_upstream_model_filters_on_reaches_a_row_count_through_a_passthrough() -> None:
    """A count(*) check on a `select *` model: its rows are its input's, and that input keeps
    only the rows whose status is set, so NULLs in status reach the count."""
    check = timed_out("row_volume", None, "volume")
    g = Graph(
        views={
            MART: NodeView(MART, "mart.rev", (check,), profiles=two((100, 40))),
            STG: NodeView(STG, "stg.orders", profiles=two((100, 40))),
            FEED: NodeView(
                FEED, "raw.orders", profiles=two((100, 100), status=(col(0.0), col(0.6)))
            ),
        },
        ups={MART: (STG,), STG: (FEED,)},
        columns=(
            ((FEED, "status"), (STG, ROWS)),
            ((FEED, "id"), (STG, "id")),
            ((STG, "id"), (MART, "id")),
        ),
    )
    inv = investigate(Trigger(MART, check, W), g)
    rel = inv.relevance[(FEED, "status", "null_jump")]
    assert rel.reaches and not rel.coincidence
