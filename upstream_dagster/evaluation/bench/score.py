"""Scoring benchmark: read + score time and peak memory on generated estates of growing size.

    python -m upstream_dagster.evaluation.bench.score --datasets 10000 100000 1000000

For each size it reads the estate through the read path, resolves the tiers through DataHub
search, scores every check and ranks the violations by risk, all on the embedded DataHub Lite.
Each size is measured in a process of its own, so its peak RSS (resource.getrusage) is its own.
Targets: each 10x step t(10x) / t(x) <= 12 (linear growth), read + score <= 2 x read alone,
and every size scored within 15 minutes and 4 GiB. Best of three repetitions per figure below
a million datasets (these machines are shared and noisy), one run at a million. Estates are
generated the first time (fast_load: the rows Lite's own write makes; minutes for a million)
and cached under the state folder, outside git.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
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
LIMIT_S = 15 * 60
LIMIT_RSS_MB = 4 * 1024
ONCE_FROM = 1_000_000
MODULE = "upstream_dagster.evaluation.bench.score"


def peak_rss_mb() -> float:
    """This process's peak resident set so far (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


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


def measure_apart(n: int, seed: int, repeat: int) -> dict[str, float]:
    """``measure`` in a fresh process (the estate already generated), with its peak RSS."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            MODULE,
            "--one",
            str(n),
            "--seed",
            str(seed),
            "--repeat",
            str(repeat),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _one(n: int, seed: int, repeat: int) -> None:
    read_s, total_s, checks, percent = measure(n, seed, repeat)
    figures = {"read_s": read_s, "total_s": total_s, "checks": checks, "percent": percent}
    print(json.dumps({**figures, "rss_mb": peak_rss_mb()}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        _one(args.one, args.seed, args.repeat)
        return
    rows = []
    for n in args.datasets:
        ensure_estate(n, args.seed)
        repeat = args.repeat if n < ONCE_FROM else 1
        f = measure_apart(n, args.seed, repeat)
        rows.append((n, f))
        total, rss = f["total_s"], f["rss_mb"]
        ok = total <= LIMIT_S and rss <= LIMIT_RSS_MB
        print(
            f"{n:>8} datasets  read {f['read_s']:7.2f} s  read+score {total:7.2f} s  "
            f"(score+read)/read {total / f['read_s']:4.2f} (target <= 2 "
            f"{'PASS' if total / f['read_s'] <= 2 else 'MISS'})  peak RSS {rss:7.0f} MB  "
            f"limits 900 s, 4096 MB {'PASS' if ok else 'MISS'}  "
            f"{f'best of {repeat}' if repeat > 1 else '1 run'}  "
            f"{int(f['checks'])} checks, {f['percent']:.1f}%",
            flush=True,
        )
    for (n0, f0), (n1, f1) in zip(rows, rows[1:], strict=False):
        growth, limit = f1["total_s"] / f0["total_s"], 1.2 * n1 / n0
        print(
            f"t({n1}) / t({n0}) = {growth:5.2f}   target <= {limit:g}  "
            f"{'PASS' if growth <= limit else 'MISS'}   peak RSS {f0['rss_mb']:.0f} -> "
            f"{f1['rss_mb']:.0f} MB (x{f1['rss_mb'] / f0['rss_mb']:.2f})"
        )


if __name__ == "__main__":
    main()
