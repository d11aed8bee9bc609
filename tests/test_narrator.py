"""The optional narrator against recorded Messages API exchanges (no network, no key here).

The exchanges use the Messages API's documented response shape. The narrator only rewords a
grounded template: the digest, the decision and the cited sources stay with code.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx2
import pytest

from upstream_dagster.conformance.context import AssetFacts, Column, MetadataContext
from upstream_dagster.conformance.plan import plan
from upstream_dagster.narrator import Narrator
from upstream_dagster.services.coverage import narrate
from upstream_dagster.spec.models import EstateSpec

A = "urn:li:dataset:(urn:li:dataPlatform:dbt,acme.marts.fct_ledger,PROD)"
REPLY = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "Ledger lines with their amounts, one per posting."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 57, "output_tokens": 14},
}


def recorded_client(
    status: int = 200, text: str | None = None
) -> tuple[anthropic.Anthropic, list[dict[str, Any]]]:
    sent: list[dict[str, Any]] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(json.loads(request.content))
        if status != 200:
            return httpx2.Response(
                status,
                json={
                    "type": "error",
                    "error": {"type": "api_error", "message": "Internal server error"},
                },
            )
        if text is None:
            return httpx2.Response(200, json=REPLY)
        return httpx2.Response(200, json={**REPLY, "content": [{"type": "text", "text": text}]})

    client = anthropic.Anthropic(
        api_key="recorded",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    return client, sent


def test_recorded_exchange_rewords_the_template_and_keeps_its_sources() -> None:
    client, sent = recorded_client()
    narrator = Narrator(budget=2, client=client)
    prose = narrator.describe(
        "fct_ledger", "fct_ledger: 2 columns (id, amount).", ("schema: 2 fields",)
    )
    assert prose == (
        "Ledger lines with their amounts, one per posting. (Sources: schema: 2 fields.)"
    )
    assert "fct_ledger: 2 columns (id, amount)." in sent[0]["messages"][0]["content"]
    assert "never invent" in sent[0]["system"] and narrator.used == 1


def test_recorded_budget_and_api_failure_fall_back_to_the_template_with_a_reason() -> None:
    client, sent = recorded_client()
    narrator = Narrator(budget=1, client=client)
    assert narrator.describe("a", "t", ("s",)) and narrator.describe("b", "t", ("s",)) is None
    assert len(sent) == 1 and "budget of 1 used up" in narrator.skipped[0]
    failing, _ = recorded_client(status=500)
    broken = Narrator(budget=5, client=failing)
    assert broken.describe("c", "t", ("s",)) is None
    assert "the model API failed" in broken.skipped[0]


def test_narration_changes_what_is_written_but_not_the_batch_digest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    raw = A.replace("marts.fct_ledger", "raw.ledger")
    ctx = MetadataContext(
        as_of_ms=0,
        transport="test",
        assets=(
            AssetFacts(urn=raw, name="acme.raw.ledger", downstreams=(A,)),
            AssetFacts(
                urn=A,
                name="acme.marts.fct_ledger",
                columns=(Column("id"), Column("amount")),
                upstreams=(raw,),
                sql="select id, cents / 100 as amount from raw.ledger",
            ),
        ),
    )
    spec = EstateSpec.model_validate(
        {
            "tiers": [
                {
                    "name": "gold",
                    "match": [{"names": ["fct_*"]}],
                    "requirements": {"require_description": True},
                }
            ],
            "policies": {"reliability": {"budgets": {"model_calls": 3}}},
        }
    )
    batch = plan(ctx, spec, 0)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    same, narration = narrate(batch, spec)
    assert same == batch and not narration.on
    client, _ = recorded_client()
    narrated, narration = narrate(batch, spec, client)
    (p,) = narrated.proposals
    assert narrated.digest == batch.digest and narration.model_calls == 1
    assert p.effective_change().values[0].startswith("Ledger lines")
    assert p.change == batch.proposals[0].change  # the grounded template is what was priced


# -- the RCA and the pull request of an incident ---------------------------------------------
def _verdict() -> Any:
    """A real verdict: the committed vendor_rename record replayed (no DataHub, no key)."""
    from pathlib import Path

    from upstream_dagster.evaluation.replay import replay
    from upstream_dagster.spec import load_estate
    from upstream_dagster.state import records

    root = Path(__file__).resolve().parent.parent
    record = records.load(root / "evals/records/vendor_rename.json")
    return replay(record["occurrences"][0]["investigation"], load_estate(root / "estate.yaml"))


def test_recorded_exchange_writes_the_rca_summary_and_pull_request_but_decides_nothing() -> None:
    from upstream_dagster.reliability.verdict import (
        pull_request_text,
        rca_markdown,
        summary_sentences,
    )
    from upstream_dagster.services.investigation import narrate

    v = _verdict()
    facts = summary_sentences(v)
    cited = facts[1].rsplit(" ", 1)[-1].rstrip(".")  # e.g. [E6][E9]
    prose = f"The promotions feed renamed its discount column {cited}."
    client, sent = recorded_client(text=prose)
    narrated = narrate(v, Narrator(budget=5, client=client))
    assert narrated.summary == prose and narrated.pull_request == prose
    assert prose in rca_markdown(narrated) and prose in pull_request_text(narrated)
    assert "written by the narrator" in rca_markdown(narrated)
    # the decision, its confidence and what a reviewer approves are untouched
    assert (narrated.digest, narrated.confidence, narrated.cause) == (
        v.digest,
        v.confidence,
        v.cause,
    )
    assert {n: used for n, used, _ in narrated.budgets}["model_calls"] == 2
    assert facts[0] in sent[0]["messages"][0]["content"]
    assert "End every sentence with the evidence markers" in sent[0]["system"]
    assert "The change:" in sent[1]["messages"][0]["content"]


@pytest.mark.parametrize(
    "reply",
    ["The vendor renamed a column [E99].", "The vendor renamed a column. It matters [E1]."],
    ids=["cites-evidence-it-was-not-given", "leaves-a-sentence-uncited"],
)
def test_recorded_ungrounded_prose_is_refused_and_the_template_kept(reply: str) -> None:
    from upstream_dagster.reliability.verdict import rca_markdown, summary_sentences
    from upstream_dagster.services.investigation import narrate

    v = _verdict()
    client, _ = recorded_client(text=reply)
    narrated = narrate(v, Narrator(budget=5, client=client))
    assert narrated.summary == "" and reply not in rca_markdown(narrated)
    assert " ".join(summary_sentences(v)) in rca_markdown(narrated)
    assert any("the template is used" in n for n in narrated.notes)


def test_without_a_key_the_rca_summary_is_the_cited_template(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from upstream_dagster.reliability.verdict import pull_request_text, summary_sentences

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    v = _verdict()
    assert not Narrator(budget=5).enabled and v.summary == ""
    sentences = summary_sentences(v)
    assert all(s.rstrip(".").endswith("]") for s in sentences)  # every sentence cites
    assert "vendor.discounts.discount_amt shows a renamed column" in sentences[1]
    text = pull_request_text(v)
    assert text.startswith("## Fix rename of vendor.discounts.discount_amt")
    assert "```diff" in text and "upstream_renamed_column" in text


def test_a_model_endpoint_that_never_answers_is_given_up_on_not_waited_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A local server that accepts the connection and never replies (what a hung proxy does):
    the first call gives up at the narrator's timeout, every later one at once, and the plan
    keeps the template with the reason. The SDK's default would wait 600 s per try."""
    import socket

    # Nobody accepts on it: the kernel completes each connection into the backlog, the request
    # is sent, and no answer ever comes. Counted afterwards, connection by connection.
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{server.getsockname()[1]}")
    monkeypatch.setenv("UPSTREAM_NARRATOR_TIMEOUT", "0.5")
    narrator = Narrator(budget=10)
    first = narrator.describe("orders", "orders: 3 columns.", ("schema: 3 fields",))
    second = narrator.describe("payments", "payments: 2 columns.", ("schema: 2 fields",))
    server.setblocking(False)
    held = []
    while True:
        try:
            held.append(server.accept()[0])
        except BlockingIOError:
            break
    server.close()
    for conn in held:
        conn.close()
    assert first is None and second is None
    # two connections: the first description's try and its one retry (the SDK's default is
    # two retries of 600 s each); the second description never called the endpoint
    assert len(held) == 2
    assert narrator.used == 1
    assert all("did not answer" in why for why in narrator.skipped)


def test_the_evidence_ledger_is_a_sortable_table_with_what_the_conclusion_cites() -> None:
    """The ledger was only inside the RCA's Markdown: now a Dagster table with a schema, every
    item in full, the ones the conclusion rests on first and starred; two columns, so the UI
    shows it beside the metadata's names without pushing anything past its right edge."""
    import dagster as dg

    from upstream_dagster.defs.presentation import verdict_metadata

    v = _verdict()
    table = verdict_metadata(v)["evidence"]
    assert isinstance(table, dg.TableMetadataValue) and table.schema is not None
    assert [c.name for c in table.schema.columns] == ["id", "evidence"]
    rows = [r.data for r in table.records]
    assert v.top is not None
    cited = {f"E{i} *" for i in v.top[0].cites}
    assert {r["id"] for r in rows[: len(cited)]} == cited  # what the conclusion rests on, first
    assert {r["id"].removesuffix(" *") for r in rows} == {f"E{e.index}" for e in v.ledger}
    claims = {e.claim for e in v.ledger}
    assert {r["evidence"].split(") ", 1)[1] for r in rows} == claims  # every claim, never clipped
    assert all("urn:li:dataset" not in r["evidence"] for r in rows)
