"""What DataHub calls a dbt node and what the warehouse calls its relation.

DataHub's dbt source names a model by ``schema.alias`` and a source by ``schema.name``; the
warehouse holds a source under its ``identifier`` (``identifier: fuel_txn_raw`` on a source
named ``fuel_events``). Everything that queries the warehouse for an entity DataHub named goes
through :func:`renamed_at`, so a query never names ``telemetry.fuel_events`` when the table is
``telemetry.fuel_txn_raw``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from upstream_dagster.spec.urns import relation_of


def datahub_table(props: Mapping[str, Any]) -> str:
    """The last part of the name DataHub's dbt source gives a manifest node, as dbt spells it."""
    return str(props.get("alias") or props["name"])


def datahub_name(props: Mapping[str, Any]) -> str:
    """``schema.table`` of the entity DataHub's dbt source makes for a manifest node."""
    return f"{props['schema']}.{datahub_table(props)}".lower()


def table_name(props: Mapping[str, Any]) -> str:
    """``schema.table`` of the node's relation in the warehouse."""
    table = props.get("alias") or props.get("identifier") or props["name"]
    return f"{props['schema']}.{table}".lower()


def renamed(manifest: Mapping[str, Any]) -> dict[str, str]:
    """DataHub's ``schema.table`` -> the warehouse's, for every node where the two differ."""
    out = {}
    for props in [*manifest.get("nodes", {}).values(), *manifest.get("sources", {}).values()]:
        if props.get("resource_type") in ("model", "source", "seed", "snapshot"):
            named, table = datahub_name(props), table_name(props)
            if named != table:
                out[named] = table
    return out


def in_warehouse(urn: str, renamed: Mapping[str, str]) -> str:
    """The warehouse's ``schema.table`` of the dataset DataHub names ``urn``."""
    named = relation_of(urn)
    return renamed.get(named, named)


def in_datahub(relation: str, renamed: Mapping[str, str]) -> str:
    """DataHub's ``schema.table`` for a relation named as the warehouse holds it (``relation``
    itself when DataHub names it the same)."""
    inverse = {table: named for named, table in renamed.items()}
    return inverse.get(".".join(relation.lower().split(".")[-2:]), relation)


@lru_cache(maxsize=8)
def _renamed(path: str, _mtime_ns: int, _size: int) -> Mapping[str, str]:
    return renamed(json.loads(Path(path).read_text()))


def renamed_at(manifest: Path | None) -> Mapping[str, str]:
    """:func:`renamed` of the manifest file (read again only when it changes); nothing when
    there is no manifest (a warehouse no dbt project built)."""
    if manifest is None:
        return {}
    try:
        st = manifest.stat()
    except OSError:
        return {}
    return _renamed(str(manifest), st.st_mtime_ns, st.st_size)
