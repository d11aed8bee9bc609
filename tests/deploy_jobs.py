"""A stand-in write-back for the deployment test: one step in Upstream's write-back pool that
holds its slot for a moment and notes when it held it. Run from a subprocess per run, as a run
worker would (``python -m tests.deploy_jobs LOG``)."""

import sys
import time
from pathlib import Path

import dagster as dg

from upstream_dagster.defs.resources import WRITEBACK_POOL, WRITEBACK_TAGS, DataHubResource


@dg.op(pool=WRITEBACK_POOL, config_schema={"log": str})
def hold_the_pool(context: dg.OpExecutionContext) -> None:
    start = time.time()
    time.sleep(3)
    with open(context.op_config["log"], "a") as log:
        log.write(f"{context.run_id} {start} {time.time()}\n")


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
    result = dg.execute_job(
        dg.reconstructable(writeback_standin),
        instance=dg.DagsterInstance.get(),
        run_config={"ops": {"hold_the_pool": {"config": {"log": str(log)}}}},
    )
    sys.exit(0 if result.success else 1)
