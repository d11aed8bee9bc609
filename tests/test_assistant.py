"""Issue 21, item 3: the dial for assistants, through a real MCP client. Every tool reads;
none writes, approves or launches anything, and DataHub is byte-identical afterwards."""

from __future__ import annotations

import asyncio
import hashlib
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from upstream_dagster.cli.assistant import server
from upstream_dagster.settings import Settings

ROOT = Path(__file__).resolve().parent.parent


def _lite(settings: Settings) -> str:
    con = sqlite3.connect(str(settings.lite_file))
    rows = con.execute(
        "SELECT urn, aspect_name, version, metadata FROM metadata_aspect_v2"
    ).fetchall()
    con.close()
    return hashlib.sha256(repr(sorted(rows)).encode()).hexdigest()


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def test_the_assistant_reads_the_dial_a_datasets_violations_and_the_queue(
    shared_estate: Settings,
) -> None:
    before = _lite(shared_estate)

    async def ask() -> dict[str, Any]:
        async with Client(server(shared_estate)) as client:
            tools = (await client.list_tools()).tools
            answers: dict[str, Any] = {"tools": tools}
            answers["dial"] = await client.call_tool("dial", {})
            answers["bad"] = await client.call_tool("violations", {"dataset": "raw.nothing_here"})
            answers["queue"] = await client.call_tool("queue", {})
            answers["missing"] = await client.call_tool("incident", {"key": "no-such-incident"})
            dial = _text(answers["dial"])
            # the first failing dataset the dial knows of, asked about by name
            answers["violations"] = await client.call_tool("violations", {"dataset": "shop.orders"})
            answers["planned"] = await client.call_tool(
                "violations", {"dataset": "intermediate.int_payments_by_order"}
            )
            answers["tie"] = await client.call_tool(  # named as the dial and the plan name it
                "violations", {"dataset": "int_shipment_times (dbt)"}
            )
            answers["dial_text"] = dial
            return answers

    answers = asyncio.run(ask())
    tools = answers["tools"]
    assert {t.name for t in tools} == {"dial", "violations", "queue", "incident", "incidents"}
    assert all(t.annotations and t.annotations.read_only_hint for t in tools)
    assert not any(w in t.name for t in tools for w in ("approve", "write", "launch", "reset"))
    assert "overall" in answers["dial_text"] and "checks" in answers["dial_text"]
    assert "not scored" in _text(answers["bad"])
    about = _text(answers["violations"])
    assert "require_owner" in about and "risk" in about  # the demo's raw feeds have no owner
    # what Upstream proposes for it, with the evidence; or why nothing, rule by rule
    assert "a priced proposal waits for the next batch" in about  # beyond max_proposals
    planned = _text(answers["planned"])
    assert "proposed (p-" in planned
    assert "add_owner alice [lineage: fct_orders (dbt) (downstream): alice" in planned
    assert "set_description One row per order_id, aggregated from stg_payments" in planned
    tie = _text(answers["tie"])
    assert "stays: owners: the lineage rule splits evenly between bob, carol (2 each)" in tie
    assert "lineage: stg_orders (dbt) (upstream): bob" in tie  # what the rule found
    assert _text(answers["queue"])
    assert answers["missing"].is_error and "no-such-incident" in _text(answers["missing"])
    assert _lite(shared_estate) == before  # nothing was written


def test_upstream_mcp_serves_over_stdio(shared_estate: Settings) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "upstream_dagster.cli", "mcp"],
        env={**os.environ},
        cwd=str(ROOT),
    )

    async def ask() -> set[str]:
        async with Client(params) as client:
            return {t.name for t in (await client.list_tools()).tools}

    assert "dial" in asyncio.run(ask())
