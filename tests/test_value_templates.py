"""Issue 31: the value assertions a detection proposal may add (a code column's accepted values,
a measure's range) are learnt from clean data, pass on it, and fail on the faults the random
suites draw and no row-level check sees: a new code, a code written in upper case, zeroed or
scaled amounts, a type change. Real DuckDB; no estate build needed."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from upstream_dagster.conformance.templates import describe, parse
from upstream_dagster.services.templates import evaluate_template, learn
from upstream_dagster.warehouse import duckdb_warehouse as dw

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)


@pytest.fixture
def con(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(str(tmp_path / "wh.duckdb"))
    con.execute("CREATE SCHEMA sales")
    con.execute(
        "CREATE TABLE sales.payments AS SELECT i AS payment_id, 1000 + i AS receipt_no, "
        "['card', 'bank', 'voucher'][i % 3 + 1] AS method, "
        "'note ' || i AS memo, 12.5 + (i % 40) * 3.25 AS amount, i % 7 AS retries, "
        "i % 3 AS \"a=b\", ['x', 'y'][i % 2 + 1] AS \"odd:name\" "
        "FROM range(1, 121) t(i)"
    )
    return con


def _learnt(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    cols = dw.relations(con)["sales.payments"]
    return {parse(t).column: t for t in learn(con, "sales.payments", cols)}


def _passes(con: duckdb.DuckDBPyConnection, template: str) -> bool:
    cols = dw.relations(con).get("sales.payments")
    return evaluate_template(con, "sales.payments", cols, template, NOW).passed


def test_learnt_on_codes_and_measures_never_on_identifiers_or_free_text(
    con: duckdb.DuckDBPyConnection,
) -> None:
    learnt = _learnt(con)
    # not payment_id, nor receipt_no (it numbers the rows), nor memo (free text), nor a name
    # holding the `=` that ends a template's column; a `:` in a name is kept whole
    assert set(learnt) == {"", "method", "amount", "retries", "odd:name"}
    assert _passes(con, learnt["odd:name"])
    assert learnt[""] == "row_count_at_least_60"  # half of the 120 rows
    assert describe(learnt[""]) == "at least 60 rows"
    assert learnt["method"] == 'accepted_values:method=["bank", "card", "voucher"]'
    assert learnt["amount"] == "in_range:amount=6.2..280"  # 12.5/2 down, 139.25*2 up
    assert learnt["retries"] == "in_range:retries=0..12"
    assert all(_passes(con, t) for t in learnt.values())  # never pages on the clean day
    assert describe(learnt["method"]) == "method holds only bank, card, voucher"
    assert describe(learnt["amount"]) == "every amount lies between 6.2 and 280"


@pytest.mark.parametrize(
    ("fault", "column", "seen"),
    [
        ("UPDATE sales.payments SET method = 'unknown' WHERE payment_id % 20 = 0", "method",
         "'unknown' (6 rows)"),
        ("UPDATE sales.payments SET method = upper(method) WHERE method = 'bank'", "method",
         "'BANK' (40 rows)"),
        ("UPDATE sales.payments SET amount = 0 WHERE payment_id < 4", "amount", "3 row(s)"),
        ("UPDATE sales.payments SET amount = amount * 10 WHERE payment_id > 100", "amount",
         "outside 6.2..280"),
        ("UPDATE sales.payments SET amount = amount * 0.01", "amount",
         "120 row(s) of amount outside"),
        ("ALTER TABLE sales.payments ALTER COLUMN amount TYPE VARCHAR", "amount",
         "amount is VARCHAR, not a number"),
        ("ALTER TABLE sales.payments RENAME COLUMN method TO method_v2", "method",
         "column method missing"),
        ("DELETE FROM sales.payments WHERE payment_id % 10 < 6", "",
         "48 rows, at least 60 expected"),
    ],
)  # fmt: skip
def test_each_fails_on_the_fault_it_exists_for_and_says_what_it_saw(
    con: duckdb.DuckDBPyConnection, fault: str, column: str, seen: str
) -> None:
    template = _learnt(con)[column]
    con.execute(fault)
    outcome = evaluate_template(
        con, "sales.payments", dw.relations(con)["sales.payments"], template, NOW
    )
    assert not outcome.passed and seen in outcome.message, outcome.message


def test_a_template_whose_parameter_is_garbled_is_not_evaluable_never_a_pass(
    con: duckdb.DuckDBPyConnection,
) -> None:
    cols = dw.relations(con)["sales.payments"]
    garbled = ("in_range:amount=high..low", "in_range:amount=9..1", "accepted_values:method=x",
               "row_count_at_least_many")  # fmt: skip
    for bad in garbled:
        outcome = evaluate_template(con, "sales.payments", cols, bad, NOW)
        assert not outcome.passed and not outcome.evaluable, bad
