"""Reliability benchmark: every scenario on a fresh copy of the built demo estate.

    python -m upstream_dagster.bench.reliability [scenarios/*.yaml ...]

Needs a built estate (`make demo`). For each scenario it copies the state folder, breaks it,
investigates every failing dataset through the reliability job, and prints per graded incident:
the conclusion, the confidence, the DataHub reads (one SQL statement each on Lite) and the
seconds. For a scenario that recurs it prints the cold and the warm run's reads and their ratio
(target: warm <= cold / 4) and checks the cold run stayed within its read budget.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from upstream_dagster import settings as settings_mod


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", type=Path)
    args = parser.parse_args()
    base = settings_mod.load()
    paths = args.scenarios or sorted((base.project_root / "scenarios").glob("*.yaml"))
    os.environ.setdefault("UPSTREAM_CLOCK", "2026-11-29T06:00:00Z")
    from upstream_dagster.evaluation import graded, run_scenario
    from upstream_dagster.reliability.scenario import load_scenario

    header = f"{'scenario':<20} {'occ':>3} {'grade':<10} {'conf':>5} {'reads':>5} {'secs':>5}"
    print(header + "  conclusion")
    with tempfile.TemporaryDirectory(prefix="upstream-bench-") as tmp:
        for path in paths:
            scenario = load_scenario(path)
            state = Path(tmp) / scenario.name
            shutil.copytree(base.state_dir, state, ignore=shutil.ignore_patterns("dagster_home"))
            os.environ["UPSTREAM_STATE_DIR"] = str(state)
            started = time.monotonic()
            outcomes = run_scenario(settings_mod.load(), scenario, "alice")
            seconds = (time.monotonic() - started) / max(len(outcomes), 1)
            cold_warm: dict[int, int] = {}
            for o in outcomes:
                grade = graded(scenario, o)
                v = o.verdict
                if grade != "not graded":
                    cold_warm.setdefault(o.occurrence, v.reads)
                print(
                    f"{scenario.name:<20} {o.occurrence:>3} {grade:<10} {v.confidence:>5.2f} "
                    f"{v.reads:>5} {seconds:>5.0f}  {v.headline()[:90]}"
                )
            if len(cold_warm) > 1:
                cold, warm = cold_warm[1], cold_warm[2]
                print(
                    f"{scenario.name:<20} warm/cold DataHub reads = {warm}/{cold} = "
                    f"{warm / cold:.2f} (target <= 0.25: {'met' if warm * 4 <= cold else 'MISSED'})"
                )
            shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    main()
