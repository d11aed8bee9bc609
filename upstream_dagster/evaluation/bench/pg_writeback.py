"""Write-backs racing on the deployment's PostgreSQL, as run workers on a cluster would: the
stand-in job holds Dagster's write-back pool slot and Upstream's write-back lock from the gate's
store the instance names (the same PostgreSQL), and notes when it held the lock.

``python -m upstream_dagster.evaluation.bench.pg_writeback --tries 100`` starts a throwaway
PostgreSQL server, and runs the race (four processes, two write-backs each) ``--tries`` times:
it prints how many races had no two write-backs overlapping. ``... worker LOG RUNS HOLD`` is
one racing process (the test and the bench start those)."""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import dagster as dg
import yaml

from upstream_dagster.defs.instance import WRITEBACK_POOL, gate_db
from upstream_dagster.defs.resources import WRITEBACK_TAGS
from upstream_dagster.settings import PROJECT_ROOT, load
from upstream_dagster.state import lease
from upstream_dagster.state.store import GateStore

MODULE = "upstream_dagster.evaluation.bench.pg_writeback"
DEPLOY = PROJECT_ROOT / "docs" / "deploy" / "dagster.yaml"
PG_ENV = {
    "DAGSTER_PG_HOST": "127.0.0.1",
    "DAGSTER_PG_USERNAME": "dagster",
    "DAGSTER_PG_PASSWORD": "dagster",
    "DAGSTER_K8S_NAMESPACE": "upstream",
}


@dg.op(pool=WRITEBACK_POOL, config_schema={"log": str, "hold": float})
def hold_the_lock(context: dg.OpExecutionContext) -> None:
    db = gate_db(load(), context.instance)
    if not db.startswith("postgresql"):
        raise dg.Failure(f"the gate store is not the instance's PostgreSQL: {db!r}")
    with lease.held(GateStore(db), context.run_id, "stand-in write-back"):
        start = time.time()
        time.sleep(context.op_config["hold"])
        end = time.time()
    with open(context.op_config["log"], "a") as log:
        log.write(f"{context.run_id} {start} {end}\n")


@dg.job(tags=WRITEBACK_TAGS, executor_def=dg.in_process_executor)  # as the code location runs
def writeback_standin() -> None:
    hold_the_lock()


def worker(log: Path, runs: int, hold: float) -> bool:
    instance = dg.DagsterInstance.get()
    config = {"ops": {"hold_the_lock": {"config": {"log": str(log), "hold": hold}}}}
    return all(
        dg.execute_job(dg.reconstructable(writeback_standin), instance=instance,
                       run_config=config).success
        for _ in range(runs)
    )  # fmt: skip


def deployment_home(home: Path, port: int, database: str) -> dict[str, str]:
    """DAGSTER_HOME with the deployment's dagster.yaml on ``database`` (runs in local processes,
    no Kubernetes); the environment its processes need."""
    config: dict[str, Any] = yaml.safe_load(DEPLOY.read_text())
    config["storage"]["postgres"]["postgres_db"]["port"] = port
    del config["run_launcher"]
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(yaml.safe_dump(config))
    return {**PG_ENV, "DAGSTER_PG_DB": database, "DAGSTER_HOME": str(home)}


def race(log: Path, env: dict[str, str], workers: int, runs: int, hold: float) -> list[Any]:
    """(start, end) of every hold of the lock by ``workers`` processes started together."""
    outputs = [log.with_suffix(f".worker{n}.txt") for n in range(workers)]
    procs = []
    for path in outputs:
        with open(path, "w") as out:  # each worker's own log, read only when it fails
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", MODULE, "worker", str(log), str(runs), str(hold)],
                    cwd=PROJECT_ROOT,
                    env={**os.environ, **env},
                    stdout=out,
                    stderr=out,
                )  # fmt: skip
            )
    codes = [p.wait(timeout=900) for p in procs]
    if codes != [0] * workers:
        tail = outputs[codes.index(next(c for c in codes if c))].read_text()[-3000:]
        raise RuntimeError(f"a racing process failed: exit codes {codes}\n{tail}")
    return sorted(
        (float(line.split()[1]), float(line.split()[2]))
        for line in log.read_text().splitlines()
        if line
    )


def overlaps(held: list[Any]) -> list[Any]:
    return [(a, b) for a, b in zip(held, held[1:], strict=False) if b[0] < a[1]]


def main() -> None:
    import tempfile

    from upstream_dagster.evaluation.bench import pg

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=100)
    args = parser.parse_args()
    clean = 0
    with pg.server() as port, tempfile.TemporaryDirectory() as tmp:
        env = deployment_home(Path(tmp) / "home", port, pg.fresh_database(port))
        subprocess.run(
            [str(Path(sys.executable).with_name("dagster")), "instance", "concurrency", "set",
             WRITEBACK_POOL, "1"],
            check=True, capture_output=True, env={**os.environ, **env}, timeout=300,
        )  # fmt: skip
        for n in range(args.tries):
            held = race(Path(tmp) / f"held-{n}.log", env, workers=4, runs=2, hold=0.2)
            bad = overlaps(held)
            clean += not bad and len(held) == 8
            print(f"race {n + 1}: {len(held)} write-backs, {len(bad)} overlapping", flush=True)
    print(f"passed {clean} of {args.tries} races (4 processes x 2 write-backs, PostgreSQL)")
    if clean != args.tries:
        raise SystemExit(1)


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        sys.exit(0 if worker(Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])) else 1)
    main()
