"""How long the reviewer's commands take, against the floor of the machine they run on.

Times ``python -c "import dagster"`` (what any Dagster command pays before doing anything) and
each command, alternating, several rounds, in one run, and prints the medians and the ratio
(command / import). A ratio, not seconds: these machines are shared and noisy.

    python -m upstream_dagster.evaluation.bench.cli [--rounds 3] [score plan show queue record]

`plan` is a read (no run); `record` is `plan --record`, the score job run in this process, as
`upstream approve` runs it before it writes a batch no run recorded yet.

`show` shows an investigated incident (run `upstream investigate` first, as
`make bench-loop` does); with none in the state folder it is left out, and said so.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def _timed(argv: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stderr[-2000:]}")
    return elapsed


def _last_incident() -> str | None:
    """The key of an incident this state folder's journal holds a verdict of."""
    from upstream_dagster import settings
    from upstream_dagster.defs import journal
    from upstream_dagster.defs.instance import dagster_instance

    found = journal.verdicts(dagster_instance(settings.load()))
    return found[0].key if found else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("commands", nargs="*", default=["score", "plan", "show", "queue", "record"])
    args = parser.parse_args()
    argv = {c: ["plan", "--record"] if c == "record" else [c] for c in args.commands}
    if "show" in argv:
        key = _last_incident()
        if key is None:
            print("show: no incident investigated in this state folder (`upstream investigate`)")
            del argv["show"]
        else:
            argv["show"] = ["show", key]
    floor_cmd = [sys.executable, "-c", "import dagster"]
    times: dict[str, list[float]] = {"import dagster": []}
    for command in argv:
        times[command] = []
    cli = [sys.executable, "-m", "upstream_dagster.cli"]
    _timed([*cli, *next(iter(argv.values()))])  # warm caches once
    for _ in range(args.rounds):
        times["import dagster"].append(_timed(floor_cmd))
        for command, words in argv.items():
            times[command].append(_timed([*cli, *words]))
    floor = statistics.median(times["import dagster"])
    print(f"{'command':<16} {'median s':>9} {'/ import dagster':>17}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<16} {median:>9.2f} {median / floor:>17.2f}")


if __name__ == "__main__":
    main()
