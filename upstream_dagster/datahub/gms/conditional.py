"""The read-modify-write every DataHub 1.x takes: the whole aspect read with its version, the
change merged into it, and written back only if nobody wrote it meanwhile.

A GMS checks ``If-Version-Match`` on an upsert (``ConditionalWriteValidator``, since PR 10868 of
2024-07-11, before 1.0): the header must name the version the aspect has now, ``-1`` for an
aspect that does not exist. When someone else wrote it between the read and the write, the
server refuses the write ("Expected version N, actual version M"); the aspect is then read and
merged again, a bounded number of times, so a concurrent edit is never overwritten."""

from __future__ import annotations

from collections.abc import Callable

from upstream_dagster.datahub.gms.reads import GmsReads
from upstream_dagster.datahub.mcp import build_mcp
from upstream_dagster.datahub.model import Json
from upstream_dagster.errors import UpstreamError
from upstream_dagster.spec.urns import entity_type

IF_VERSION_MATCH = "If-Version-Match"
ABSENT = "-1"  # the version a missing aspect has (ConditionalWriteValidator)
# A stored aspect whose system metadata names no version is checked against max(1, row
# version), and the latest row is version 0: "1".
UNNAMED = "1"
# (current value or None) -> the value to write, or None when nothing needs writing
Merge = Callable[[Json | None], Json | None]


class ConcurrentEdits(UpstreamError):
    """Someone kept writing the aspect while Upstream merged its change into it."""


def is_conflict(exc: BaseException) -> bool:
    """A refused precondition: Rest.li answers 422 with the validator's message."""
    return "Expected version" in str(exc) or "PRECONDITION" in str(exc)


class ConditionalWrites(GmsReads):
    conflict_tries = 3  # reads and writes of one aspect before a conflict is reported

    def versioned(self, urn: str, aspect: str) -> tuple[Json | None, str]:
        """The aspect's current value and the version a conditional write must name."""
        response = self._graph._session.post(
            f"{self.url}/openapi/v3/entity/{entity_type(urn).lower()}/batchGet",
            params={"systemMetadata": "true"},
            json=[{"urn": urn, aspect: {}}],
        )
        response.raise_for_status()
        for item in response.json():
            found = item.get(aspect)
            if item.get("urn") == urn and isinstance(found, dict) and "value" in found:
                meta = found.get("systemMetadata") or {}
                return found["value"], str(meta.get("version") or UNNAMED)
        return None, ABSENT

    def conditional(self, urn: str, aspect: str, merge: Merge) -> int:
        """Merge a change into the aspect and write it if nobody wrote it meanwhile. Returns
        the tries it took (0: the aspect already held the change); raises `ConcurrentEdits`
        when every try met a concurrent edit."""
        from datahub.configuration.common import OperationalError
        from datahub.emitter.rest_emitter import EmitMode

        for attempt in range(1, self.conflict_tries + 1):
            current, version = self.versioned(urn, aspect)
            want = merge(current)
            if want is None or want == current:
                return 0
            mcp = build_mcp(urn, aspect, want)
            mcp.headers = {IF_VERSION_MATCH: version}
            try:  # synchronous whatever DATAHUB_EMIT_MODE says: a refusal must come back here
                self._graph.emit_mcp(mcp, emit_mode=EmitMode.SYNC_PRIMARY)
            except OperationalError as exc:
                if is_conflict(exc):
                    continue
                raise
            return attempt
        raise ConcurrentEdits(
            f"{aspect} of {urn} was changed by someone else each of the "
            f"{self.conflict_tries} times Upstream merged its change into it; nothing was "
            "overwritten",
            "run the write-back again once the other writer has finished",
        )
