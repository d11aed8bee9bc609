"""Field paths as people name fields.

DataHub's v2 field paths (Avro, Kafka, Protobuf, nested JSON) carry the schema's bookkeeping in
square brackets: ``[version=2.0].[type=struct].[type=boolean].field_foo_2``. A person calls
that field ``field_foo_2``, and a nested one ``address.city``: the bracketed parts go, the
names stay, as DataHub's own UI shows them.
"""

from __future__ import annotations

import re

_BRACKETED = re.compile(r"\[[^\]]*\]")


def field_name(path: str) -> str:
    """``[version=2.0].[type=boolean].field_foo_2`` -> ``field_foo_2``; a v1 path is itself."""
    if "[" not in path:
        return path
    parts = [p for p in _BRACKETED.sub("", path).split(".") if p]
    return ".".join(parts) or path


def same_field(a: str, b: str) -> bool:
    """Two field paths that name the same field, whatever their case or v2 bookkeeping."""
    return field_name(a).lower() == field_name(b).lower()
