"""Which DataHub a run writes to, as a Dagster resource.

On the embedded default both fields are empty and runs write to DataHub Lite in the state
folder. With ``DATAHUB_GMS_URL`` set (and ``DATAHUB_GMS_TOKEN`` where authentication is on) the
fields are ``dagster.EnvVar``s: Dagster reads them in the run's own process (a Kubernetes run
pod gets them from a secret, docs/deploy/dagster.yaml), so neither the address nor the token is
ever stored in run config, the event log or shown in the UI.
"""

import dataclasses
import os

import dagster as dg

from upstream_dagster.settings import Settings


class DataHubResource(dg.ConfigurableResource):  # type: ignore[misc]
    """The DataHub a run writes to: empty for the embedded DataHub Lite; with a GMS, read from
    the DATAHUB_GMS_URL and DATAHUB_GMS_TOKEN environment variables in the run's own process."""

    gms_url: str = ""
    gms_token: str = ""

    def target(self, settings: Settings) -> Settings:
        """``settings`` pointed at this resource's DataHub."""
        return dataclasses.replace(
            settings, gms_url=self.gms_url or None, gms_token=self.gms_token or None
        )


def datahub_resource() -> DataHubResource:
    if not os.environ.get("DATAHUB_GMS_URL"):
        return DataHubResource()
    token = dg.EnvVar("DATAHUB_GMS_TOKEN") if os.environ.get("DATAHUB_GMS_TOKEN") else ""
    return DataHubResource(gms_url=dg.EnvVar("DATAHUB_GMS_URL"), gms_token=token)
