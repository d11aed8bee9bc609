"""The whole loop a newcomer runs, step by step, against the floor of the machine it runs on.

    python -m upstream_dagster.evaluation.bench.loop [--scenario scenarios/loud_rename.yaml]

In a fresh state folder: ``upstream demo``, ``plan``, ``approve`` the batch, ``break`` the
estate with a scenario, ``investigate``, ``approve --incident`` the fix, which resolves the
incident. Prints each step's seconds and its ratio to ``python -c "import dagster"`` (the median
of runs before, between and after the steps): a ratio, for these machines are shared and noisy.
Exits 1 when a step fails or the incident is not resolved.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from upstream_dagster.spec.loader import load_estate

DIGEST = re.compile(r"--digest ([0-9a-f]{16})")
INCIDENT = re.compile(r"upstream approve --incident (\S+)")


def _timed(
    argv: list[str], env: dict[str, str] | None = None, stdin: str = ""
) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, input=stdin, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(
            f"{' '.join(argv[2:])} failed:\n{done.stdout[-3000:]}{done.stderr[-2000:]}"
        )
    return elapsed, done.stdout


def _found(pattern: re.Pattern[str], text: str, what: str) -> str:
    found = pattern.search(text)
    if not found:
        raise SystemExit(f"no {what} in:\n{text[-2000:]}")
    return found.group(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", type=Path, default=Path("scenarios/loud_rename.yaml"))
    parser.add_argument("--state", type=Path, default=None)
    args = parser.parse_args()
    env = dict(os.environ)
    env["UPSTREAM_STATE_DIR"] = str(args.state or Path(tempfile.mkdtemp(prefix="upstream-loop-")))
    reviewer = load_estate(Path(env.get("UPSTREAM_ESTATE", "estate.yaml"))).policies.approvers[0]
    upstream = [sys.executable, "-m", "upstream_dagster.cli"]
    floor = [_timed([sys.executable, "-c", "import dagster"])[0]]
    steps: list[tuple[str, float]] = []

    def step(name: str, *argv: str, stdin: str = "") -> str:
        seconds, out = _timed([*upstream, *argv], env, stdin)
        steps.append((name, seconds))
        floor.append(_timed([sys.executable, "-c", "import dagster"])[0])
        return out

    step("demo", "demo")
    digest = _found(DIGEST, step("plan", "plan"), "batch digest")
    step("approve", "approve", "--all", "--digest", digest, "--reviewer", reviewer, "--yes")
    step("break", "break", str(args.scenario))
    key = _found(INCIDENT, step("investigate", "investigate"), "incident to approve")
    fixed = step("approve fix", "approve", "--incident", key, "--reviewer", reviewer, "--yes")
    resolved = fixed.splitlines()[-1].startswith("resolved")
    base = statistics.median(floor)
    print(f"{'step':<14} {'seconds':>8} {'/ import dagster':>17}")
    print(f"{'import dagster':<14} {base:>8.2f} {1:>17.2f}  (median of {len(floor)})")
    for name, seconds in steps:
        print(f"{name:<14} {seconds:>8.2f} {seconds / base:>17.2f}")
    total = sum(s for _, s in steps)
    print(f"{'the loop':<14} {total:>8.2f} {total / base:>17.2f}")
    print(f"{'resolved' if resolved else 'NOT resolved'}: {fixed.strip().splitlines()[-1]}")
    if not resolved:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
