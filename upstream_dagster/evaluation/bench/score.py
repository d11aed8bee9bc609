"""Scoring benchmark: read + score time on generated estates of growing size.

    python -m upstream_dagster.evaluation.bench.score --datasets 10000 100000

For each size it reads the estate through the read path, resolves the tiers through DataHub
search, scores every check and ranks the violations by risk, all on the embedded DataHub Lite.
Targets: t(100k) / t(10k) <= 12 (linear growth) and read + score <= 2 x read alone. Best of
three repetitions per figure: these machines are shared and noisy. Generating 100,000 datasets
through Lite's own write takes about fifteen minutes the first time; the file is then cached.
"""

from __future__ import annotations

import argparse
import time

from upstream_dagster.conformance.risk import rank_violations
from upstream_dagster.conformance.score import score
from upstream_dagster.datahub.lite import LiteGraph
from upstream_dagster.datahub.readpath import read_context
from upstream_dagster.datahub.tier_search import resolve_scope
from upstream_dagster.evaluation.bench.read_path import ensure_estate
from upstream_dagster.spec.models import EstateSpec

SPEC = EstateSpec.model_validate(
    {
        "tiers": [
            {
                "name": "tier-1",
                "match": [{"tags": ["tier1"], "names": ["agg_*", "fct_*"]}],
                "requirements": {
                    "require_owner": True,
                    "require_description": True,
                    "require_glossary_term": True,
                    "require_domain": True,
                    "min_assertions": 1,
                    "freshness_sla_hours": 24,
                },
            },
            {
                "name": "tier-2",
                "match": [{"names": ["fct_*", "agg_*", "int_*"]}],
                "requirements": {
                    "require_owner": True,
                    "require_description": True,
                    "require_domain": True,
                    "min_assertions": 1,
                },
            },
            {
                "name": "rest",
                "match": [{"platforms": ["dbt"]}],
                "requirements": {"require_owner": True, "require_description": True},
            },
        ]
    }
)
NOW_MS = 1_795_000_000_000


def measure(n: int, seed: int, repeat: int) -> tuple[float, float, int, float]:

    lite_file = ensure_estate(n, seed)
    reads, totals = [], []
    checks, percent = 0, 0.0
    for _ in range(repeat):
        graph = LiteGraph(lite_file)
        start = time.perf_counter()
        ctx = read_context(graph, NOW_MS)
        reads.append(time.perf_counter() - start)
        scope = resolve_scope(graph, SPEC, ctx)
        dial = score(ctx, SPEC, scope, NOW_MS)
        rank_violations(ctx, SPEC, dial.results, NOW_MS)
        totals.append(time.perf_counter() - start)
        checks, percent = dial.overall.checks, dial.overall.percent
        graph.close()
    return min(reads), min(totals), checks, percent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = []
    for n in args.datasets:
        read_s, total_s, checks, percent = measure(n, args.seed, args.repeat)
        rows.append((n, read_s, total_s))
        print(
            f"{n:>7} datasets  read {read_s:7.2f} s  read+score {total_s:7.2f} s  "
            f"(score+read)/read {total_s / read_s:4.2f}  target <= 2  "
            f"{'PASS' if total_s / read_s <= 2 else 'MISS'}   {checks} checks, {percent:.1f}%"
        )
    if len(rows) > 1:
        (n0, _, t0), (n1, _, t1) = rows[0], rows[-1]
        growth = t1 / t0
        limit = 1.2 * n1 / n0
        print(
            f"t({n1}) / t({n0}) = {growth:.2f}   target <= {limit:g}  "
            f"{'PASS' if growth <= limit else 'MISS'}"
        )


if __name__ == "__main__":
    main()
