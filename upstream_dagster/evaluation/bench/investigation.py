"""Investigation benchmark: the lineage walk on a generated estate of N models.

    python -m upstream_dagster.evaluation.bench.investigation --models 10000

The estate is layers of models (10 by default, N / 10 each): every model reads the model
below it in its own chain and up to two more from nearby chains (fan-in), with column
lineage on ``c0`` along every edge. A fault is injected deep upstream: a source in the bottom
layer, reached from the symptom by a random walk up its lineage, renames ``c0`` inside the
incident window; every model between it and the symptom shows ``c0`` going NULL, and the
symptom's check on ``c0`` fails. Everything else is healthy.

``investigate`` (upstream_dagster/reliability) runs over it through ``BenchProbe``, which
answers from memory and counts DataHub reads as the real probe (datahub/probe.py's
GraphProbe) spends them: two for the lineage (edges, then siblings and compiled SQL), one
history read per node observed, one run read per observed hop, one assertion read when a hop
has failing checks, one read of the last runs. Printed: reads per hop, total reads, the time
of the investigation alone, and whether it named the injected cause. Deterministic per seed.
"""

from __future__ import annotations

import argparse
import random
import time
from dataclasses import dataclass, field
from typing import Any

from upstream_dagster.reliability.health import (
    ColumnProfile,
    FailingCheck,
    NodeView,
    Profile,
    SchemaEvent,
    Window,
)
from upstream_dagster.reliability.investigate import investigate
from upstream_dagster.reliability.walk import BudgetExhausted, Trigger, reachable
from upstream_dagster.spec.urns import relation_of

COLUMN = "c0"
WINDOW = Window(last_good_ms=1_000, symptom_ms=2_000)
FAN_IN = 2  # extra upstreams per model, besides its own chain's
SPREAD = 20  # how far across chains a model reads


def model_urn(layer: int, k: int) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:dbt,bench.l{layer:02d}_m{k:05d},PROD)"


def _profiles(before: float, after: float) -> tuple[Profile, ...]:
    return (
        Profile(900, 100, ((COLUMN, ColumnProfile(before, 5.0)),)),
        Profile(1_500, 100, ((COLUMN, ColumnProfile(after, 5.0)),)),
    )


@dataclass
class Estate:
    """A generated lineage graph with one injected fault."""

    ups: dict[str, tuple[str, ...]]
    views: dict[str, NodeView]
    columns: tuple[tuple[tuple[str, str], tuple[str, str]], ...]
    symptom: str
    cause: str
    path: tuple[str, ...]  # the random walk cause -> symptom the fault was injected along

    @property
    def trigger(self) -> Trigger:
        return Trigger(self.symptom, self.views[self.symptom].failing[0], WINDOW)


def _descendants(ups: dict[str, tuple[str, ...]], cause: str) -> set[str]:
    downs: dict[str, tuple[str, ...]] = {}
    for down, parents in ups.items():
        for up in parents:
            downs[up] = (*downs.get(up, ()), down)
    return _ancestors(downs, cause)  # the ancestors over the reversed edges


def _ancestors(ups: dict[str, tuple[str, ...]], node: str) -> set[str]:
    return reachable(node, ups) | {node}


def generate(models: int, seed: int = 7, layers: int = 10) -> Estate:
    """``models`` models in ``layers`` layers, a fault at the bottom; the same per seed."""
    if models < layers * 2:
        raise ValueError(f"need at least {layers * 2} models for {layers} layers, not {models}")
    rng = random.Random(seed)
    width = models // layers
    ups: dict[str, tuple[str, ...]] = {}
    for layer in range(1, layers):
        for k in range(width):
            extra = {
                min(width - 1, max(0, k + rng.randint(-SPREAD, SPREAD)))
                for _ in range(rng.randint(0, FAN_IN))
            }
            ups[model_urn(layer, k)] = tuple(sorted(model_urn(layer - 1, j) for j in {k, *extra}))
    symptom = model_urn(layers - 1, rng.randrange(width))
    path = [symptom]
    while path[-1] in ups:
        path.append(rng.choice(ups[path[-1]]))
    cause = path[-1]
    # The fault travels every path from the cause to the symptom, not only the walk's.
    hit = (_descendants(ups, cause) & _ancestors(ups, symptom)) - {cause, symptom}
    views: dict[str, NodeView] = {}
    for layer in range(layers):
        for k in range(width):
            u = model_urn(layer, k)
            views[u] = NodeView(
                u, u.split(",")[1], profiles=_profiles(0.0, 1.0 if u in hit else 0.0)
            )
    views[cause] = NodeView(
        cause,
        cause.split(",")[1],
        schema=(
            SchemaEvent(500, "ADD", COLUMN, "VARCHAR"),
            SchemaEvent(1_200, "REMOVE", COLUMN, "VARCHAR"),
            SchemaEvent(1_200, "ADD", f"{COLUMN}_renamed", "VARCHAR"),
        ),
    )
    failing = FailingCheck("urn:li:assertion:bench", f"{COLUMN} not null", COLUMN, 2_000)
    views[symptom] = NodeView(
        symptom, symptom.split(",")[1], (failing,), profiles=_profiles(0.0, 1.0)
    )
    columns = tuple(
        sorted(((up, COLUMN), (down, COLUMN)) for down, parents in ups.items() for up in parents)
    )
    return Estate(ups, views, columns, symptom, cause, tuple(reversed(path)))


@dataclass
class BenchProbe:
    """The Probe methods over an ``Estate``, counting reads as GraphProbe spends them."""

    estate: Estate
    budget: int | None = None
    reads: int = 0
    hops: list[tuple[int, int]] = field(default_factory=list)  # (nodes, reads) per observe
    _lineage_read: bool = False
    _runs_read: bool = False
    _history: set[str] = field(default_factory=set)

    def _spend(self, n: int = 1) -> None:
        for _ in range(n):
            if self.budget is not None and self.reads >= self.budget:
                raise BudgetExhausted()
            self.reads += 1

    def _lineage(self) -> None:
        if not self._lineage_read:
            self._spend(2)  # the edges, then the siblings and compiled SQL of their ends
            self._lineage_read = True

    def upstreams(self, urn: str) -> tuple[str, ...]:
        self._lineage()
        return self.estate.ups.get(urn, ())

    def column_edges(self) -> tuple[tuple[tuple[str, str], tuple[str, str]], ...]:
        self._lineage()
        return self.estate.columns

    def observe(self, urns: tuple[str, ...], with_runs: bool = True) -> dict[str, NodeView]:
        before = self.reads
        for u in urns:
            if u not in self._history:
                self._spend()  # one history read per node, cached
                self._history.add(u)
        self._spend()  # the hop's assertion runs
        views = {u: self.estate.views.get(u, NodeView(u, u)) for u in urns}
        if any(v.failing for v in views.values()):
            self._spend()  # the failing runs' assertion infos
        if with_runs and not self._runs_read:
            self._spend()  # the last runs, once
            self._runs_read = True
        self.hops.append((len(urns), self.reads - before))
        return views

    def relation(self, urn: str) -> str:
        return relation_of(urn)

    def forensic(self, sql: str, relations: set[str]) -> tuple[str | None, list[Any], str]:
        return None, [], "no warehouse in the benchmark"


@dataclass(frozen=True)
class Result:
    models: int
    cause: str
    found: str | None
    column: str | None
    failure_class: str | None
    hops: tuple[tuple[int, int], ...]
    reads: int
    walked: int
    seconds: float

    @property
    def found_cause(self) -> bool:
        return self.found == self.cause


def run(models: int, seed: int = 7, budget: int | None = None) -> Result:
    """Generate, investigate once, and return every figure the bench prints (one run)."""
    estate = generate(models, seed)
    probe = BenchProbe(estate, budget)
    start = time.perf_counter()
    inv = investigate(estate.trigger, probe)
    seconds = time.perf_counter() - start
    top = inv.ranked[0][0] if inv.ranked else None
    return Result(
        models=models,
        cause=estate.cause,
        found=top.cause if top else None,
        column=top.column if top else None,
        failure_class=top.failure_class if top else None,
        hops=tuple(probe.hops),
        reads=probe.reads,
        walked=inv.walked,
        seconds=seconds,
    )


def report(r: Result) -> list[str]:
    lines = [f"{r.models} models, fault injected at {r.cause}"]
    lines += [
        f"  observe {i:>2}: {nodes:>5} nodes  {reads:>5} DataHub reads"
        for i, (nodes, reads) in enumerate(r.hops, 1)
    ]
    lines.append(
        f"  total DataHub reads {r.reads} (lineage 2 + per-hop reads {sum(x for _, x in r.hops)})"
        f", {r.walked} nodes walked, investigation {r.seconds:.2f} s"
    )
    lines.append(
        f"  found the injected cause: {'YES' if r.found_cause else 'NO'} "
        f"(top hypothesis {r.found} {r.column} {r.failure_class})"
    )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", type=int, nargs="+", default=[10_000])
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    for n in args.models:
        print("\n".join(report(run(n, args.seed))), flush=True)


if __name__ == "__main__":
    main()
