"""Where a run's writes would go, as the run's own process resolves the `datahub` resource."""

import dagster as dg

from upstream_dagster.defs.resources import (
    DataHubResource,
)


@dg.asset
def datahub_target(datahub: DataHubResource) -> str:
    """Where a run's writes would go, as the run's own process resolves the resource."""
    target = datahub.target()
    return f"{target.backend} {target.gms_url} token={'set' if target.gms_token else 'none'}"
