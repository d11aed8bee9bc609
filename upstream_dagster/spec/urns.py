"""How the short names people write in estate.yaml become DataHub URNs."""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping

PREFIX = {
    "domains": "urn:li:domain:",
    "tags": "urn:li:tag:",
    "terms": "urn:li:glossaryTerm:",
    "owners": "urn:li:corpuser:",
    "structured_properties": "urn:li:structuredProperty:",
}


def to_urn(kind: str, value: str) -> str:
    """`finance` -> `urn:li:domain:finance`; a value that already is a URN is kept as written."""
    return value if value.startswith("urn:li:") else PREFIX[kind] + value


def to_urns(kind: str, values: list[str]) -> tuple[str, ...]:
    return tuple(to_urn(kind, v) for v in values)


def short(urn: str) -> str:
    """The readable tail of a URN: `urn:li:tag:tier1` -> `tier1`."""
    if urn.startswith("urn:li:dataset:("):
        return urn.split(",")[1]
    return urn.rsplit(":", 1)[-1]


def display(urn: str, names: Mapping[str, str]) -> str:
    """What a person calls ``urn``: the display name DataHub holds, else the URN's tail."""
    return names.get(urn) or short(urn)


def dataset_name(urn: str) -> str:
    """`urn:li:dataset:(urn:li:dataPlatform:p,db.schema.table,PROD)` -> `db.schema.table`."""
    if urn.startswith("urn:li:dataset:(") and "," in urn:
        return urn[urn.index(",") + 1 : urn.rindex(",")]
    return urn.rsplit(":", 1)[-1]


def platform_of(urn: str) -> str:
    marker = "urn:li:dataPlatform:"
    if marker in urn:
        rest = urn[urn.index(marker) + len(marker) :]
        return rest.split(",", 1)[0].split(")", 1)[0]
    return urn.split(":")[2] if urn.count(":") >= 2 else ""


def name_matches(urn: str, pattern: str) -> bool:
    """Glob over the dataset name's trailing parts: `fct_*` matches the table name,
    `marts.fct_*` the schema and table, `warehouse.marts.fct_*` all three. DataHub search
    (on every backend) and what-if simulation both match names with this one function."""
    parts = pattern.count(".") + 1
    target = ".".join(dataset_name(urn).lower().split(".")[-parts:])
    return fnmatch.fnmatchcase(target, pattern.lower())
