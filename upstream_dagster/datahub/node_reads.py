"""Reading what DataHub holds about a node into the pure core's records: profiles (with their
distinct counts and value frequencies), check runs, and a model's code over time."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from upstream_dagster.datahub.model import AspectVersion, Json
from upstream_dagster.reliability.health import CheckRun, ColumnProfile, Profile


def column_profile(f: Json) -> ColumnProfile:
    mean = f.get("mean")
    unique = f.get("uniqueCount")
    values = tuple(
        (str(v.get("value")), int(v.get("frequency") or 0))
        for v in f.get("distinctValueFrequencies") or []
    )
    return ColumnProfile(
        float(f.get("nullProportion") or 0.0),
        float(mean) if mean is not None and mean != "" else None,
        f.get("max"),
        int(unique) if unique is not None and unique != "" else None,
        values,
        f.get("min"),
    )


def profiles_of(versions: Sequence[AspectVersion]) -> tuple[Profile, ...]:
    out = []
    for v in versions:
        p = v.value
        cols = [(str(f["fieldPath"]), column_profile(f)) for f in p.get("fieldProfiles") or []]
        part = (p.get("partitionSpec") or {}).get("partition", "")
        out.append(
            Profile(
                int(p["timestampMillis"]),
                int(p.get("rowCount") or 0),
                tuple(cols),
                "" if part in ("", "FULL_TABLE_SNAPSHOT") else str(part),
            )
        )
    return tuple(sorted(set(out), key=lambda x: x.at_ms))


def check_run(r: Any) -> CheckRun:
    native = dict(r.native)
    return CheckRun(
        r.assertion_urn,
        r.timestamp_ms,
        r.result == "SUCCESS",
        str(native.get("message", ""))[:300],
        str(native.get("observed", "")),
    )


def code_of(
    histories: Sequence[dict[str, list[AspectVersion]]],
) -> tuple[tuple[tuple[int, str], ...], str]:
    """A model's own code over time, and its compiled SQL now (from whichever of the asset's
    entities DataHub keeps viewProperties on)."""
    for h in histories:
        versions = sorted(h.get("viewProperties") or [], key=lambda v: v.created_ms)
        if versions:
            code = tuple(
                (v.created_ms, str(v.value.get("viewLogic") or ""))
                for v in versions
                if v.value.get("viewLogic")
            )
            return code, str(versions[-1].value.get("formattedViewLogic") or "")
    return (), ""
