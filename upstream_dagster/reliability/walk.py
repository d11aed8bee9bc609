"""What the lineage walk works with: the probe it reads through, the trigger, memory, and the
investigation it builds up. Plain records, no I/O."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from upstream_dagster.reliability.evidence import Finding, Hypothesis, Ledger, Score
from upstream_dagster.reliability.health import FailingCheck, NodeView, Window

# The downstream end of a row-lineage edge: a column that decides which rows a model holds
# (a filter, a join key, a grouping) feeds every column of it.
ROWS = "*"
T = TypeVar("T")


class BudgetExhausted(Exception):
    """The run's DataHub read budget is spent."""


class Probe(Protocol):
    def upstreams(self, urn: str) -> tuple[str, ...]: ...

    def observe(self, urns: tuple[str, ...], with_runs: bool = True) -> dict[str, NodeView]: ...

    def column_edges(self) -> tuple[tuple[tuple[str, str], tuple[str, str]], ...]: ...

    def forensic(self, sql: str, relations: set[str]) -> tuple[str | None, list[Any], str]: ...

    def relation(self, urn: str) -> str:
        """``schema.table`` a forensic query names for the dataset ``urn`` (the warehouse's
        name for it, which DataHub's can differ from)."""
        ...

    @property
    def reads(self) -> int: ...


@dataclass(frozen=True)
class Memory:
    """What an earlier incident on this symptom taught: read from structured properties."""

    cause: str
    column: str | None
    failure_class: str


@dataclass(frozen=True)
class Trigger:
    symptom: str
    check: FailingCheck
    window: Window
    # Other datasets the failing check reads (a referential-integrity test's parent table):
    # walked as if they fed the symptom, since the check's failure can start in either.
    inputs: tuple[str, ...] = ()
    # The columns it reads there (the parent's key): connected to the symptom like its own.
    input_columns: tuple[tuple[str, str], ...] = ()


@dataclass
class Investigation:
    trigger: Trigger
    ledger: Ledger = field(default_factory=Ledger)
    findings: dict[str, list[Finding]] = field(default_factory=dict)
    upstream: dict[str, tuple[str, ...]] = field(default_factory=dict)
    ranked: list[tuple[Hypothesis, Score]] = field(default_factory=list)
    walked: int = 0
    day_profiled: set[str] = field(default_factory=set)  # nodes whose days are profiled
    observed: set[str] = field(default_factory=set)  # nodes something could be seen on
    tie: str = ""  # two causes the walk could not separate, and the probe that would
    forensic_queries: int = 0
    budget_note: str = ""
    memory_used: bool = False
    views: dict[str, NodeView] = field(default_factory=dict)  # what was observed of each node
    # each hypothesis's relevance, by (cause, column, class): whether it reaches the checked
    # data and whether that data moved (`relevance.Relevance`)
    relevance: dict[tuple[str, str, str], Any] = field(default_factory=dict)

    @property
    def unhealthy(self) -> set[str]:
        return {u for u, f in self.findings.items() if any(not x.minor for x in f)}


def reachable(start: T, nexts: Mapping[T, Iterable[T]]) -> set[T]:
    """Every node reachable from ``start`` along ``nexts`` (``start`` itself only via a cycle)."""
    seen: set[T] = set()
    stack = [start]
    while stack:
        for nxt in nexts.get(stack.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def column_ancestors(
    edges: tuple[tuple[tuple[str, str], tuple[str, str]], ...], *targets: tuple[str, str]
) -> set[tuple[str, str]]:
    """The upstream columns that feed any of ``targets``: through the column lineage, and
    through row lineage (a column deciding a model's rows feeds all of its columns)."""
    ups: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for up, down in edges:
        ups.setdefault((down[0], down[1].lower()), set()).add((up[0], up[1].lower()))
    seen: set[tuple[str, str]] = set()
    stack = [(t[0], t[1].lower()) for t in targets]
    while stack:
        node = stack.pop()
        for up in ups.get(node, set()) | ups.get((node[0], ROWS), set()):
            if up not in seen:
                seen.add(up)
                stack.append(up)
    return seen
