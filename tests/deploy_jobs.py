"""A stand-in write-back for the deployment test: one step in Upstream's write-back pool that
takes Upstream's write-back lock in the gate's store the instance names (its PostgreSQL), as
the real write-backs do, holds it for a moment and notes when it held it. Run from a subprocess
per run, as a run worker would (``python -m tests.deploy_jobs LOG [RUNS]``)."""

import sys
import time
from pathlib import Path

import dagster as dg

from upstream_dagster.defs.resources import (
    WRITEBACK_POOL,
    WRITEBACK_TAGS,
    DataHubResource,
    gate_db,
)
from upstream_dagster.settings import load
from upstream_dagster.state import lease
from upstream_dagster.state.store import GateStore


@dg.op(pool=WRITEBACK_POOL, config_schema={"log": str, "hold": float})
def hold_the_pool(context: dg.OpExecutionContext) -> None:
    db = gate_db(load(), context.instance)
    assert db.startswith("postgresql"), f"the gate store is not the instance's database: {db!r}"
    with lease.held(GateStore(db), context.run_id, "stand-in write-back"):
        start = time.time()
        time.sleep(context.op_config["hold"])
        end = time.time()
    with open(context.op_config["log"], "a") as log:
        log.write(f"{context.run_id} {start} {end}\n")


@dg.job(tags=WRITEBACK_TAGS)
def writeback_standin() -> None:
    hold_the_pool()


@dg.asset
def datahub_target(datahub: DataHubResource) -> str:
    """Where a run's writes would go, as the run's own process resolves the resource."""
    target = datahub.target()
    return f"{target.backend} {target.gms_url} token={'set' if target.gms_token else 'none'}"


if __name__ == "__main__":
    log = Path(sys.argv[1])
    times = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    hold = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
    instance = dg.DagsterInstance.get()
    ok = True
    for _ in range(times):
        result = dg.execute_job(
            dg.reconstructable(writeback_standin),
            instance=instance,
            run_config={"ops": {"hold_the_pool": {"config": {"log": str(log), "hold": hold}}}},
        )
        ok = ok and result.success
    sys.exit(0 if ok else 1)
