"""Read-path benchmark: DataHub calls per 1,000 datasets, and read time vs a bare SQL scan.

    python -m upstream_dagster.evaluation.bench.read_path --datasets 10000

Loads a generated estate into DataHub Lite (cached under the state folder), then reads
everything scoring needs through the read path (the eight slices) and compares that with one
bare SQL scan of the same latest-aspect rows. Targets: calls/1k <= 10, ratio <= 2. The best of
several repetitions is reported for both sides, because these machines are shared and noisy.
"""

from __future__ import annotations

import argparse
import sqlite3
import time
from pathlib import Path

import orjson

from upstream_dagster.datahub.lite import LiteGraph
from upstream_dagster.datahub.readpath import read_context
from upstream_dagster.evaluation.bench.estate_gen import generate
from upstream_dagster.settings import load


def bare_scan(lite_file: Path, decode: bool = False) -> tuple[float, int]:
    """One SQL scan of every latest aspect row; with ``decode``, also parse each row's JSON."""
    con = sqlite3.connect(str(lite_file))
    start = time.perf_counter()
    rows = con.execute(
        "SELECT urn, aspect_name, metadata FROM metadata_aspect_v2 WHERE version = 0"
    ).fetchall()
    if decode:
        rows = [(u, a, orjson.loads(m)) for u, a, m in rows]
    elapsed = time.perf_counter() - start
    con.close()
    return elapsed, len(rows)


def read_once(lite_file: Path) -> tuple[float, int, int]:

    graph = LiteGraph(lite_file)
    start = time.perf_counter()
    ctx = read_context(graph, as_of_ms=0)
    elapsed = time.perf_counter() - start
    graph.close()
    return elapsed, graph.counter.calls, len(ctx.datasets())


def ensure_estate(n: int, seed: int) -> Path:
    lite_file = load().state_dir / "bench" / f"estate-v2-{n}-{seed}.sqlite"
    if not lite_file.exists():
        # Written under a temporary name and renamed when whole: an interrupted generation
        # never leaves a half estate that a later run would take for the cached one.
        partial = lite_file.with_name(lite_file.name + ".partial")
        start = time.perf_counter()
        written = generate(partial, n, seed)
        for suffix in ("-wal", "-shm", ""):
            if Path(f"{partial}{suffix}").exists():
                Path(f"{partial}{suffix}").rename(f"{lite_file}{suffix}")
        print(
            f"generated {n} datasets ({written} aspects, the rows Lite's write makes) in "
            f"{time.perf_counter() - start:.0f} s -> {lite_file}",
            flush=True,
        )
    return lite_file


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    lite_file = ensure_estate(args.datasets, args.seed)
    reads = [read_once(lite_file) for _ in range(args.repeat)]
    scans = [bare_scan(lite_file) for _ in range(args.repeat)]
    decoded = [bare_scan(lite_file, decode=True) for _ in range(args.repeat)]
    read_s, calls, datasets = min(reads)
    scan_s, rows = min(scans)
    decode_s, _ = min(decoded)
    per_k = calls / (datasets / 1000)
    ratio = read_s / scan_s
    print(f"datasets read              {datasets}")
    print(f"DataHub calls (SQL stmts)  {calls}")
    print(
        f"calls per 1,000 datasets   {per_k:.2f}   target <= 10   "
        f"{'PASS' if per_k <= 10 else 'MISS'}"
    )
    print(f"read path (8 slices)       {read_s:.3f} s")
    print(f"bare SQL scan ({rows} rows) {scan_s:.3f} s")
    print(
        f"read / bare scan           {ratio:.2f}   target <= 2    "
        f"{'PASS' if ratio <= 2 else 'MISS'}"
    )
    # DataHub Lite keeps aspects as JSON text: decoding the rows is part of any read of them.
    print(f"bare scan + JSON decode    {decode_s:.3f} s")
    print(f"read / (scan + decode)     {read_s / decode_s:.2f}   (Upstream's own overhead)")


if __name__ == "__main__":
    main()
