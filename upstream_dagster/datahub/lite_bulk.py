"""A generated estate written straight into a new DataHub Lite file (the benchmarks').

Two writers, one result. ``bulk_load`` hands every record to Lite's own ``write`` (an SDK
round trip, an index probe and a commit per aspect, then Lite's ``reindex`` of the browse
edges on close): about fifteen minutes for 100,000 datasets, hours for a million.
``fast_load`` produces the same rows in a fraction of that:

- the aspect JSON is the SDK's own serialization, made once per *shape* (the record with its
  free-text and timestamp leaves replaced by slots) and then filled in per record; the first
  record of every shape is also serialized whole through the SDK and must match its fill-in
  exactly, so a shape the slots cannot express stops the load instead of writing a wrong row;
- the rows are the ones Lite's ``write`` inserts for a new aspect (version 1 and version 0,
  the same JSON text, the same system metadata), inserted many at a time in one transaction;
- the browse edges are made by Lite's own hooks (``post_update_hook`` and
  ``global_post_update_hook``, as its ``reindex`` calls them), fed only the aspects those
  hooks read.

tests/test_lite_bulk.py writes a small estate both ways and compares both Lite tables row for
row (timestamps aside) and what the read path reads back.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from upstream_dagster.datahub import _sdk
from upstream_dagster.datahub.mcp import build_mcp
from upstream_dagster.datahub.model import Json

LITE_OPTIONS = {"journal_mode": "WAL", "busy_timeout": 10000, "synchronous": "OFF"}
# The aspects Lite's browse-edge hooks read (see SqlBackedLite.post_update_hook and
# global_post_update_hook): every other aspect leaves the edge table as it is.
HOOK_ASPECTS = frozenset(
    {
        "datasetProperties",
        "containerProperties",
        "dataPlatformInstance",
        "chartInfo",
        "dashboardInfo",
        "tagProperties",
        "container",
        "subTypes",
    }
)
BATCH = 20_000
_ENUM = re.compile(r"^[A-Z][A-Z0-9_]*$")
_STR_SLOT = "~~upstream-slot-{}~~"
_INT_SLOT = 8_101_000_000_000_000_000
_SLOT = re.compile(r'"~~upstream-slot-(\d+)~~"|8101000000000(\d{6})')


def _new_lite(path: Path) -> Any:
    _sdk.prepare()
    from datahub.lite.lite_util import get_datahub_lite

    path.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return get_datahub_lite(
        {"type": "sqlite", "config": {"file": str(path), "options": LITE_OPTIONS}}
    )


def bulk_load(path: Path, records: Iterable[tuple[str, str, Json]]) -> int:
    """A new Lite file holding ``records`` (urn, aspect, value), written one MCP at a time
    through Lite's own write (the reference ``fast_load`` is tested against); returns how many."""
    lite = _new_lite(path)
    written = 0
    try:
        for urn, aspect, value in records:
            lite.write(build_mcp(urn, aspect, value))
            written += 1
    finally:
        lite.close()
    return written


def _sdk_json(urn: str, aspect: str, value: Json) -> str:
    """The text Lite's write stores for this aspect: json.dumps of the SDK's simplified form."""
    obj = build_mcp(urn, aspect, value).to_obj(simplified_structure=True)
    return json.dumps(obj["aspect"]["json"])


def _shape(value: Any, leaves: list[Any]) -> Any:
    """``value`` with its free-text strings and long integers replaced by slots (their values
    appended to ``leaves``); enum-like strings, small numbers and booleans stay in the shape."""
    if isinstance(value, dict):
        return tuple((k, _shape(v, leaves)) for k, v in value.items())
    if isinstance(value, list):
        return ("__list__", *(_shape(v, leaves) for v in value))
    if isinstance(value, str) and not _ENUM.match(value):
        leaves.append(value)
        return ("__str__", len(leaves) - 1)
    if type(value) is int and abs(value) >= 2**31:
        leaves.append(value)
        return ("__int__", len(leaves) - 1)
    return ("__lit__", type(value).__name__, value)


def _unshape(shape: Any) -> Any:
    if shape and shape[0] == "__list__":
        return [_unshape(s) for s in shape[1:]]
    if shape and shape[0] == "__str__":
        return _STR_SLOT.format(shape[1])
    if shape and shape[0] == "__int__":
        return _INT_SLOT + shape[1]
    if shape and shape[0] == "__lit__":
        return shape[2]
    return {k: _unshape(v) for k, v in shape}


class _Templates:
    """The SDK's serialization of each aspect shape, split at its slots."""

    def __init__(self) -> None:
        self._by_shape: dict[tuple[str, Any], list[Any]] = {}

    def render(self, urn: str, aspect: str, value: Json) -> str:
        leaves: list[Any] = []
        key = (aspect, _shape(value, leaves))
        parts = self._by_shape.get(key)
        if parts is None:
            parts = self._compile(urn, aspect, key[1], len(leaves))
            self._by_shape[key] = parts
            text = self._fill(parts, leaves)
            if text != _sdk_json(urn, aspect, value):
                raise ValueError(
                    f"fast_load cannot template the {aspect} of {urn}: its SDK serialization "
                    "depends on a value the template slots out; write it with bulk_load"
                )
            return text
        return self._fill(parts, leaves)

    @staticmethod
    def _compile(urn: str, aspect: str, shape: Any, slots: int) -> list[Any]:
        text = _sdk_json(urn, aspect, _unshape(shape))
        parts: list[Any] = []
        pos = 0
        for m in _SLOT.finditer(text):
            parts.append(text[pos : m.start()])
            parts.append(int(m.group(1) if m.group(1) is not None else m.group(2)))
            pos = m.end()
        parts.append(text[pos:])
        if sorted(p for p in parts if isinstance(p, int)) != list(range(slots)):
            raise ValueError(
                f"fast_load cannot template {aspect}: the SDK moved, dropped or repeated a "
                "value of it; write it with bulk_load"
            )
        return parts

    @staticmethod
    def _fill(parts: list[Any], leaves: list[Any]) -> str:
        out = []
        for p in parts:
            if type(p) is int:
                v = leaves[p]
                out.append(json.dumps(v) if type(v) is str else str(v))
            else:
                out.append(p)
        return "".join(out)


def _system_metadata(now_ms: int) -> str:
    """What Lite's write stores as system metadata for a first version written at ``now_ms``
    (an MCP without system metadata, as build_mcp makes)."""
    from datahub.metadata.schema_classes import SystemMetadataClass

    meta = SystemMetadataClass(lastObserved=now_ms, properties={}).to_obj()
    meta.setdefault("properties", {})["sysVersion"] = "1"
    return json.dumps(meta)


def _insert(con: Any, sql: str, rows: list[tuple[str, str, int, str, str, int]]) -> None:
    try:
        con.executemany(sql, rows)
    except sqlite3.IntegrityError as exc:
        raise ValueError(
            "fast_load writes each (urn, aspect) once; the records repeat one "
            f"({exc}): pass one value per aspect, or write versions with bulk_load"
        ) from exc


def fast_load(path: Path, records: Iterable[tuple[str, str, Json]]) -> int:
    """A new Lite file holding ``records`` (urn, aspect, value), each (urn, aspect) once: the
    rows and edges ``bulk_load`` makes (see the module note), in minutes for a million
    datasets; returns how many."""
    from datahub.emitter.aspect import ASPECT_MAP
    from datahub.emitter.serialization_helper import post_json_transform

    lite = _new_lite(path)
    con = lite.sqlite_client
    now_ms = int(time.time() * 1000)
    system = _system_metadata(now_ms)
    templates = _Templates()
    entities: dict[str, dict[str, Any]] = {}
    insert = "INSERT INTO metadata_aspect_v2 VALUES (?, ?, ?, ?, ?, ?)"
    batch: list[tuple[str, str, int, str, str, int]] = []
    written = 0
    try:
        for urn, aspect, value in records:
            text = templates.render(urn, aspect, value)
            batch.append((urn, aspect, 1, text, system, now_ms))
            batch.append((urn, aspect, 0, text, system, now_ms))
            hooked = entities.setdefault(urn, {})
            if aspect in HOOK_ASPECTS:
                hooked[aspect] = ASPECT_MAP[aspect].from_obj(post_json_transform(json.loads(text)))
            written += 1
            if len(batch) >= BATCH:
                _insert(con, insert, batch)
                batch.clear()
        _insert(con, insert, batch)
        con.commit()
        # Lite's close() runs reindex(): the edge table rebuilt from every entity, in urn
        # order, by these two hooks.
        for urn in sorted(entities):
            aspect_map = entities[urn]
            for name, typed in aspect_map.items():
                lite.post_update_hook(urn, name, typed)
            lite.global_post_update_hook(urn, aspect_map)
        con.commit()
    finally:
        # Not lite.close(): that would reindex every aspect again, the slow part being avoided.
        con.close()
    return written
