"""The dial for assistants: a read-only MCP server over the services the command line uses.

`upstream mcp` serves it over stdio. Its tools read DataHub and Dagster's journal and nothing
else: none writes, approves or launches anything (each is marked read-only), so an assistant
can answer "how conformant are we, what is wrong with this table, what waits on me, why did
this page fire" and a person still does every write.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

from upstream_dagster import clock
from upstream_dagster.conformance.detection import with_detection
from upstream_dagster.conformance.plan import Plan
from upstream_dagster.conformance.score import render
from upstream_dagster.datahub import connected
from upstream_dagster.datahub.readpath import read_context
from upstream_dagster.defs import incident_list, instance, journal
from upstream_dagster.errors import UpstreamError
from upstream_dagster.services import coverage, scoring
from upstream_dagster.settings import Settings
from upstream_dagster.spec.loader import load_estate
from upstream_dagster.spec.urns import relation_of
from upstream_dagster.state import claims


@contextmanager
def _named() -> Iterator[None]:
    """An Upstream error reaches the assistant whole: the problem and the fix."""
    try:
        yield
    except UpstreamError as exc:
        raise ToolError(f"{exc.problem}; fix: {exc.fix}") from None


MAX_DATASET = 512  # characters of a `dataset` argument: a schema.table or a DataHub URN
MAX_KEY = 300  # characters of an incident `key`: dataset, check, time and assertion id
_SHOWN = 40  # of an argument refused for its length: its start, never the whole of it


def _bounded(argument: str, value: str, most: int, limit: str, fix: str) -> str:
    """``value`` when it is at most ``most`` characters; else a one-line refusal that names
    the limit and shows only its start (the error is logged, and read by the assistant)."""
    if len(value) > most:
        raise ToolError(
            f"{argument} is {len(value)} characters, more than {limit} ({most}): "
            f"{value[:_SHOWN]!r}...; fix: {fix}"
        )
    return value


def _planned(batch: Plan, asset: str, requirement: str) -> str:
    """What the current plan does about one violation: its proposal, or why none."""
    for p in batch.proposals:
        if (p.asset, p.requirement) == (asset, requirement):
            return (
                f"  proposed ({p.id}): {p.change.kind} {batch.shown(p)} [{'; '.join(p.evidence)}]"
            )
    for u in batch.unfixable:
        if (u.asset, u.requirement) == (asset, requirement):
            return "\n".join([f"  stays: {u.reason}", *(f"    {line}" for line in u.looked)])
    return "  a priced proposal waits for the next batch (max_proposals_per_run)"


READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)


def server(settings: Settings) -> MCPServer:
    app: MCPServer = MCPServer(
        "upstream",
        instructions="Read-only views of Upstream: the conformance dial of estate.yaml against "
        "DataHub, a dataset's violations and why, what waits on a person, and an incident's "
        "root-cause analysis. Nothing here writes; approvals are made by a person.",
    )

    @app.tool(annotations=READ_ONLY)
    def dial() -> str:
        """The conformance dial: per tier and per requirement, as DataHub reads now."""
        with _named(), connected(settings) as graph:
            spec = load_estate(settings.estate_file)
            found = coverage.detection_of(settings)
            return render(scoring.read_and_score(graph, spec, clock.now_ms(), found))

    @app.tool(annotations=READ_ONLY)
    def violations(dataset: str) -> str:
        """A dataset's failing requirements, why each fails, its risk arithmetic, and what
        Upstream proposes for it or why it proposes nothing (which rule looked, what it
        found). ``dataset``: as the dial names it (``fct_orders (dbt)``), schema.table, or a
        DataHub URN."""
        _bounded(
            "dataset", dataset, MAX_DATASET, "MAX_DATASET", "pass schema.table or the dataset's URN"
        )
        with _named(), connected(settings) as graph:
            spec = load_estate(settings.estate_file)
            rejected = claims.rejected(instance.gate_store(settings))
            inputs = coverage.plan_inputs(settings, rejected)
            ctx = with_detection(read_context(graph, clock.now_ms()), inputs.detection, spec)
            dial = scoring.dial_of(graph, spec, ctx)
            batch = coverage.replan(ctx, spec, inputs)
        wanted = dataset.strip().lower()

        def named(urn: str) -> bool:  # as the dial, the plan and the UI name it, or its URN
            return wanted in (urn.lower(), relation_of(urn), ctx.label(urn).lower())

        found = [v for v in scoring.ranked(ctx, spec, dial) if named(v.check.asset)]
        if not found:
            known = any(named(r.asset) for r in dial.results)
            return (
                f"{dataset}: every requirement passes."
                if known
                else f"{dataset} is not scored: no tier of estate.yaml selects it."
            )
        return "\n".join(
            f"- {v.check.requirement} ({v.check.tier}): {v.check.reason}; "
            f"risk {v.risk.score:.2f} = {v.risk.explain()}\n"
            + _planned(batch, v.check.asset, v.check.requirement)
            for v in found
        )

    @app.tool(annotations=READ_ONLY)
    def queue() -> str:
        """Everything waiting on a person: the coverage batch and incident fixes to approve."""
        runs_db = instance.dagster_instance(settings)
        planned = journal.latest(runs_db, journal.QUEUE)
        lines = [line for line in str(planned.get("queue", "")).splitlines() if line.strip()]
        lines += [
            f"- {w}" for w in journal.waiting_incidents(runs_db, instance.gate_store(settings))
        ]
        return "\n".join(lines) or "Nothing is waiting on a person."

    @app.tool(annotations=READ_ONLY)
    def incident(key: str) -> str:
        """An incident's root-cause analysis: cause, confidence, evidence, patch. ``key``: its
        id (the incidents tool lists them), its whole key, or ``latest``."""
        _bounded("key", key, MAX_KEY, "MAX_KEY", "pass an id the incidents tool lists")
        runs_db = instance.dagster_instance(settings)
        with _named():
            key = incident_list.resolve(runs_db, key)
        found = journal.verdict(runs_db, key)
        if found is None:
            raise ToolError(f"no investigation of {key!r}; list them with the incidents tool")
        return f"{found.conclusion}\n\n{found.rca}"

    @app.tool(annotations=READ_ONLY)
    def incidents() -> str:
        """Every investigated incident, newest first: id, dataset, check, status, age,
        confidence, owner and conclusion."""
        runs_db = instance.dagster_instance(settings)
        now = clock.now_ms()
        return (
            "\n".join(
                f"- {r.id} {r.dataset} {r.check}: {r.status}, {r.age(now)}, confidence "
                f"{r.confidence:.2f}, owner {r.owner}; {r.conclusion}"
                for r in incident_list.rows(runs_db, instance.gate_store(settings))
            )
            or "No incident has been investigated."
        )

    return app
