"""The connection every GMS read and write shares: the SDK's `DataHubGraph`, one counted HTTP
request per call, GraphQL with scrolling, and the server's version (read once, from ``/config``,
when the connection is tested) that decides which operation each surface uses."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from upstream_dagster.datahub import _sdk
from upstream_dagster.datahub.gms import versions
from upstream_dagster.datahub.model import GMS, CallCounter, Json
from upstream_dagster.errors import DataHubUnavailable, redact

PAGE = 1000  # results per GraphQL scroll page


def first_line(exc: BaseException) -> str:
    text = redact(str(exc).strip())
    return text.splitlines()[0][:200] if text else type(exc).__name__


class GmsClient:
    transport = "gms"
    capabilities = GMS

    def __init__(self, url: str, token: str | None = None, *, timeout_sec: float = 15) -> None:
        _sdk.prepare()  # no telemetry, nothing written to the home folder
        from datahub.ingestion.graph.client import DatahubClientConfig, DataHubGraph

        self.url = url.rstrip("/")
        self.counter = CallCounter()
        self._graph = DataHubGraph(
            DatahubClientConfig(
                server=self.url,
                token=token,
                timeout_sec=timeout_sec,
                retry_max_times=0,
                openapi_ingestion=False,
            )
        )
        try:
            self._graph.test_connection()
        except Exception as exc:  # noqa: BLE001 - the SDK raises many types for one cause
            raise DataHubUnavailable(
                f"cannot reach DataHub GMS at {self.url} ({first_line(exc)})",
                "check that GMS is running and DATAHUB_GMS_URL points at it (for example "
                "http://localhost:8080), set DATAHUB_GMS_TOKEN if authentication is on, or "
                "unset DATAHUB_GMS_URL to use the embedded DataHub Lite",
            ) from exc
        self._graph._session.hooks["response"].append(self._count)
        # test_connection read /config; its version decides each operation, once per graph
        self.version = versions.parse(self._graph.server_config.service_version)

    @property
    def server(self) -> str:
        return f"DataHub GMS {versions.shown(self.version)} at {redact(self.url)}"

    def supports(self, feature: str) -> bool:
        return versions.supports(self.version, feature)

    def operation(self, surface: str) -> str:
        """What this server is sent for a surface (``upstream spike`` prints it)."""
        from upstream_dagster.datahub.gms.routes import describe

        return describe(self.version, surface)

    def _count(self, response: Any, *args: Any, **kwargs: Any) -> Any:
        self.counter.add(response.request.method.lower())
        return response

    def _gql(self, query: str, variables: Json) -> Json:
        result: Json = self._graph.execute_graphql(query, variables=variables)
        return result

    def _scroll(self, query: str, field: str, variables: Json) -> Iterator[Json]:
        scroll_id: str | None = None
        while True:
            payload = dict(variables["input"], scrollId=scroll_id, count=PAGE)
            page = self._gql(query, {"input": payload})[field]
            yield from page.get("searchResults") or []
            scroll_id = page.get("nextScrollId")
            if not scroll_id:
                return

    def close(self) -> None:
        self._graph.close()
