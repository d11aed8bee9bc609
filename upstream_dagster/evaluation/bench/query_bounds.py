"""Do the query bounds bind? Issue 25's three runaway shapes, run as forensic SQL with a budget.

Each shape runs through `forensic` in a fresh process (so that its peak memory is its own) on a
scratch warehouse of 300 rows; the table says how long it took, the peak resident memory of the
caller and of the worker that ran the query (an upper bound: see `peak_mb`; 0 when the caller
ran it itself), and how it ended: ran, stopped (deadline or memory), capped (rows or bytes),
refused. A last line times an ordinary query, the first of a process (which starts the worker)
and the ones after it:

    python -m upstream_dagster.evaluation.bench.query_bounds [--seconds 5] [--memory-mb 256]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb

from upstream_dagster.warehouse import bounded
from upstream_dagster.warehouse.duckdb_warehouse import forensic

SHAPES = {
    "unnest": "SELECT unnest(generate_series(1, 2000000000)) AS x FROM s.t",
    "range": "SELECT range(0, 2000000000) AS r FROM s.t",
    "repeat": "SELECT repeat('x', 10000000) FROM s.t LIMIT 200",
    "ordinary": "SELECT count(*), min(a), max(a), count(DISTINCT b) FROM s.t",
}
ORDINARY_RUNS = 30
MODULE = "upstream_dagster.evaluation.bench.query_bounds"


def make_warehouse(path: Path) -> Path:
    con = duckdb.connect(str(path))
    con.execute(
        "CREATE SCHEMA s; "
        "CREATE TABLE s.t AS SELECT range AS a, 'row ' || range AS b FROM range(300)"
    )
    con.close()
    return path


def outcome(ran: str | None, why: str) -> str:
    if ran is None:
        return "refused"
    if not why:
        return "ran"
    if "longer than" in why:
        return "stopped (deadline)"
    if "needed more than" in why:
        return "stopped (memory)"
    if "was cut at" in why:
        return "capped"
    return "failed"


def one(sql: str, warehouse: Path, seconds: float, memory_mb: int) -> dict[str, Any]:
    """``sql`` run here; this process's peak memory and its worker's."""
    started = time.monotonic()
    ran, rows, why = forensic(warehouse, sql, {"s.t"}, seconds, memory_mb)
    took = time.monotonic() - started
    bounded.shutdown()  # a worker counts in RUSAGE_CHILDREN once it has ended
    return {
        "seconds": round(took, 2),
        "caller_mb": peak_mb(),
        "worker_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024,
        "outcome": outcome(ran, why),
        "rows": len(rows),
        "why": why,
    }


def peak_mb() -> int:
    """This process's own peak resident memory. Not getrusage: a process started by another
    inherits its starter's peak there (so a worker's figure is an upper bound that includes
    the caller's resident memory when it started the worker)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def ordinary(warehouse: Path, seconds: float, memory_mb: int) -> dict[str, Any]:
    times = []
    for _ in range(ORDINARY_RUNS):
        started = time.monotonic()
        _, _, why = forensic(warehouse, SHAPES["ordinary"], {"s.t"}, seconds, memory_mb)
        times.append(time.monotonic() - started)
        if why:
            raise SystemExit(f"the ordinary query did not run: {why}")
    return {"first_ms": times[0] * 1000, "then_ms": statistics.median(times[1:]) * 1000}


def measure(sql: str | None, warehouse: Path, seconds: float, memory_mb: int) -> dict[str, Any]:
    """`one` (or, without ``sql``, `ordinary`) in a fresh process: what it printed."""
    command = [sys.executable, "-m", MODULE, "--warehouse", str(warehouse)]
    command += ["--seconds", str(seconds), "--memory-mb", str(memory_mb)]
    command += ["--sql", sql] if sql else ["--ordinary"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"outcome": f"crashed ({done.returncode})", "why": done.stderr.strip()[-300:]}
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--memory-mb", type=int, default=256)
    parser.add_argument("--warehouse", type=Path, help="(in the process of one measurement)")
    parser.add_argument("--sql", help="run this one query here and print what it took")
    parser.add_argument("--ordinary", action="store_true", help="time ordinary queries here")
    args = parser.parse_args()
    if args.sql or args.ordinary:
        found = one(args.sql, **_budget(args)) if args.sql else ordinary(**_budget(args))
        print(json.dumps(found))
        return
    with tempfile.TemporaryDirectory() as folder:
        args.warehouse = make_warehouse(Path(folder) / "w.duckdb")
        print(f"budget {args.seconds:g} s / {args.memory_mb} MB")
        print(f"{'shape':<9} {'seconds':>7} {'caller MB':>9} {'worker MB':>9}  outcome")
        for shape, sql in SHAPES.items():
            r = measure(sql, **_budget(args))
            print(
                f"{shape:<9} {r.get('seconds', 0):>7.2f} {r.get('caller_mb', 0):>9} "
                f"{r.get('worker_mb', 0):>9}  {r['outcome']}: {r['why'][:110]}"
            )
        r = measure(None, **_budget(args))
        if "first_ms" not in r:
            raise SystemExit(f"the ordinary runs failed: {r['why']}")
        print(
            f"ordinary query x{ORDINARY_RUNS} in one process: first {r['first_ms']:.0f} ms, "
            f"then {r['then_ms']:.1f} ms each (median)"
        )


def _budget(args: argparse.Namespace) -> dict[str, Any]:
    return {"warehouse": args.warehouse, "seconds": args.seconds, "memory_mb": args.memory_mb}


if __name__ == "__main__":
    main()
