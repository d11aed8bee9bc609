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
from upstream_dagster.defs.coverage_ops import narrate
from upstream_dagster.narrator import Narrator
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


def recorded_client(status: int = 200) -> tuple[anthropic.Anthropic, list[dict[str, Any]]]:
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
        return httpx2.Response(200, json=REPLY)

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
    ctx = MetadataContext(
        as_of_ms=0,
        transport="test",
        assets=(
            AssetFacts(
                urn=A, name="acme.marts.fct_ledger", columns=(Column("id"), Column("amount"))
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
    same, meta = narrate(batch, spec)
    assert same == batch and meta["narrator"].startswith("off")
    client, _ = recorded_client()
    narrated, meta = narrate(batch, spec, client)
    (p,) = narrated.proposals
    assert narrated.digest == batch.digest and meta["model_calls"] == 1
    assert p.effective_change().values[0].startswith("Ledger lines")
    assert p.change == batch.proposals[0].change  # the grounded template is what was priced
