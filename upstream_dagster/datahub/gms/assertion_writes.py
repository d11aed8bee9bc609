"""Assertions on a GMS: the definition through ``upsertCustomAssertion`` and each result through
``reportAssertionResult`` where the server takes the SDK's documents (1.7 and 1.6), else the
aspects themselves, which every 1.x takes. Each is reported only once it reads back."""

from __future__ import annotations

import json
import time

from upstream_dagster.datahub.gms.conditional import ConditionalWrites
from upstream_dagster.datahub.gms.reads import run_events
from upstream_dagster.datahub.graphql_ops import RUN_EVENTS
from upstream_dagster.datahub.mcp import build_mcp
from upstream_dagster.datahub.model import PROPERTIES_PREFIX, Json, Receipt

ASSERTION_PLATFORM = "urn:li:dataPlatform:upstream"


class AssertionWrites(ConditionalWrites):
    # seconds to wait before each read-back of an asynchronously indexed write
    read_back_waits: tuple[float, ...] = (0.0, 0.25, 0.5, 1.0, 2.0)

    def _upsert(self, urn: str, aspect: str, value: Json) -> Receipt:
        try:
            mcp = build_mcp(urn, aspect, value)
        except (KeyError, ValueError, TypeError, AttributeError) as exc:
            return Receipt(urn, aspect, False, f"not a valid {aspect} aspect: {exc}")
        self._graph.emit_mcp(mcp)
        # A write is reported only once it reads back.
        back = self.get_aspects([urn], [aspect]).get(urn, {}).get(aspect)
        if back is None:
            return Receipt(urn, aspect, False, "GMS accepted the write but it did not read back")
        return Receipt(urn, aspect, True, "written to DataHub GMS and read back")

    def _write_assertion(self, urn: str, info: Json) -> Receipt:
        custom = info.get("customAssertion") or {}
        if (
            info.get("type") != "CUSTOM"
            or not custom.get("entity")
            or not self.supports("custom_assertion")
        ):  # before 1.7 the SDK's mutation is not valid: the aspect itself, on every 1.x
            return self._upsert(urn, "assertionInfo", info)
        logic = str(custom.get("logic") or "")
        if info.get("customProperties"):  # the mutation keeps no customProperties
            carried = json.dumps(info["customProperties"], sort_keys=True)
            logic = f"{logic}\n{PROPERTIES_PREFIX}{carried}"
        # Dataset-level, the column named in the logic: OSS rejects column-level run events.
        self._graph.upsert_custom_assertion(
            urn=urn,
            entity_urn=custom["entity"],
            type=str(custom["type"]),
            description=str(info.get("description") or custom["type"]),
            platform_urn=ASSERTION_PLATFORM,
            logic=logic,
        )
        back = self.get_aspects([urn], ["assertionInfo"]).get(urn, {}).get("assertionInfo") or {}
        if (back.get("customAssertion") or {}).get("type") != custom["type"]:
            return Receipt(urn, "assertionInfo", False, "assertion upserted but did not read back")
        return Receipt(
            urn, "assertionInfo", True, "assertion upserted in DataHub GMS and read back"
        )

    def _write_run_event(self, urn: str, event: Json) -> Receipt:
        result = event.get("result") or {}
        native = result.get("nativeResults") or {}
        if self.supports("assertion_result"):
            self._graph.report_assertion_result(
                urn=urn,
                timestamp_millis=int(event["timestampMillis"]),
                type=result["type"],
                properties=[{"key": str(k), "value": str(v)} for k, v in native.items()],
            )
            how = "reported"
        else:  # before 1.6 the SDK's mutation is not valid: the timeseries aspect itself
            self._graph.emit_mcp(build_mcp(urn, "assertionRunEvent", event))
            how = "written as an assertionRunEvent"
        return self._run_event_read_back(urn, int(event["timestampMillis"]), how)

    def _run_event_read_back(self, urn: str, stamp: int, how: str) -> Receipt:
        """Run events are indexed asynchronously (DataHub's own smoke test waits before reading
        them): ask again within a bounded wait, and say how long it took."""
        started = time.monotonic()
        for wait in self.read_back_waits:
            time.sleep(wait)
            events = run_events(self._gql(RUN_EVENTS, {"urns": [urn], "limit": 1, "start": None}))
            if any(int(e["timestampMillis"]) == stamp for e in events):
                took = time.monotonic() - started
                return Receipt(
                    urn, "assertionRunEvent", True, f"result {how}, read back after {took:.1f} s"
                )
        return Receipt(
            urn,
            "assertionRunEvent",
            False,
            f"result {how} but not read back within {sum(self.read_back_waits):.1f} s: DataHub "
            "indexes run events asynchronously, so it may still appear",
        )
