"""DataHub URNs: how the short names people write in estate.yaml become URNs, and every way
Upstream reads a URN apart. Nothing else in the package parses a URN by hand."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from functools import lru_cache

PREFIX = {
    "domains": "urn:li:domain:",
    "tags": "urn:li:tag:",
    "terms": "urn:li:glossaryTerm:",
    "owners": "urn:li:corpuser:",
    "structured_properties": "urn:li:structuredProperty:",
}
_FIELD = re.compile(r"^urn:li:schemaField:\((?P<dataset>.+),(?P<path>[^,]+)\)$")
PLATFORM = "urn:li:dataPlatform:"


def to_urn(kind: str, value: str) -> str:
    """`finance` -> `urn:li:domain:finance`; a value that already is a URN is kept as written."""
    return value if value.startswith("urn:li:") else PREFIX[kind] + value


def to_urns(kind: str, values: list[str]) -> tuple[str, ...]:
    return tuple(to_urn(kind, v) for v in values)


def entity_type(urn: str) -> str:
    """`urn:li:dataset:(...)` -> `dataset`."""
    return urn.split(":")[2] if urn.count(":") >= 2 else ""


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


def relation_of(urn: str) -> str:
    """``schema.table``: the last two parts of the dataset name, lower case."""
    name = urn[urn.index(",") + 1 : urn.rindex(",")] if "," in urn else urn
    return ".".join(name.lower().split(".")[-2:])


def label_of(urn: str) -> str:
    """An entity as a reviewer recognises it when no display name was read: its name and
    platform, ``fct_orders (dbt)``, as the dial and the plan label assets (a dashboard's
    ``urn:li:dashboard:(looker,sales.revenue)`` reads ``revenue (looker)``)."""
    if urn.startswith("urn:li:dataset:"):
        name, platform = dataset_name(urn), platform_of(urn)
    elif urn.count("(") == 1 and urn.endswith(")") and "," in urn:
        platform, _, name = urn[urn.index("(") + 1 : -1].partition(",")
    else:
        return short(urn)
    name = name.rsplit(".", 1)[-1]
    return f"{name} ({platform})" if platform else name


def platform_of(urn: str) -> str:
    if PLATFORM in urn:
        rest = urn[urn.index(PLATFORM) + len(PLATFORM) :]
        return rest.split(",", 1)[0].split(")", 1)[0]
    return entity_type(urn)


def field_dataset(field_urn: str) -> str | None:
    """The dataset of a schemaField URN, or None when it is not one."""
    match = _FIELD.match(field_urn)
    return match.group("dataset") if match else None


def field_path(field_urn: str) -> str:
    """The column path of a schemaField URN (the URN itself when it is not one)."""
    match = _FIELD.match(field_urn)
    return match.group("path") if match else field_urn


_CLOSE = {'"': '"', "`": "`", "[": "]"}


def unquoted(column: str) -> str:
    """A column as its table names it. dbt keeps a ``quote: true`` column's quotes in its tests'
    ``column_name`` (``"user"``, ```user```), and DataHub's dbt source copies that into the
    assertion's field, which then names no field of the schema."""
    close = _CLOSE.get(column[:1])
    if close is None or len(column) < 3 or column[-1] != close:
        return column
    return column[1:-1].replace(close * 2, close)


def field_urn(dataset: str, path: str) -> str:
    return f"urn:li:schemaField:({dataset},{path})"


def dbt_urn(database: str, schema: str, name: str) -> str:
    """The URN DataHub's dbt source gives a dbt node (the primary of a twin pair)."""
    return f"urn:li:dataset:({PLATFORM}dbt,{database}.{schema}.{name},PROD)"


@lru_cache(maxsize=1 << 16)  # what-if scoring asks the same pairs once per simulated change
def name_matches(urn: str, pattern: str) -> bool:
    """Glob over the dataset name's trailing parts: `fct_*` matches the table name,
    `marts.fct_*` the schema and table, `warehouse.marts.fct_*` all three. DataHub search
    (on every backend) and what-if simulation both match names with this one function."""
    parts = pattern.count(".") + 1
    target = ".".join(dataset_name(urn).lower().split(".")[-parts:])
    return fnmatch.fnmatchcase(target, pattern.lower())
