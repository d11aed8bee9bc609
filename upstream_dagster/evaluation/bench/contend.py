"""Processes that contend for the write-back lock, for the bench and the tests: each imports
only the gate's store, so starting one costs a Python start, not Dagster's import."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

from upstream_dagster.state import lease
from upstream_dagster.state.store import GateStore

MODULE = "upstream_dagster.evaluation.bench.contend"


def race(url: str, log: str, tries: int, seed: int) -> None:
    """A write-back stand-in: take the lock, note when it held it, give it back."""
    store, rng = GateStore(url), random.Random(seed)
    for n in range(tries):
        with lease.held(store, f"w{seed}-{n}", "a contender", wait=120):
            start = time.time()
            time.sleep(rng.uniform(0, 0.005))
            end = time.time()
        with open(log, "a") as handle:
            handle.write(f"{start} {end}\n")


def hold_and_die(url: str) -> None:
    """Take the lock and die holding it (kill -9 of itself)."""
    lease.acquire(GateStore(url), "doomed", "killed while holding")
    os.kill(os.getpid(), signal.SIGKILL)


def start(*args: str) -> subprocess.Popen[bytes]:
    """One contender in a fresh interpreter (``race URL LOG TRIES SEED`` or ``die URL``): a
    spawned multiprocessing child would import its parent's main module (the bench, Dagster)
    before it could start."""
    return subprocess.Popen([sys.executable, "-m", MODULE, *args])


if __name__ == "__main__":
    if sys.argv[1] == "race":
        race(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        hold_and_die(sys.argv[2])
