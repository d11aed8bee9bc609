"""A generated estate of N datasets with layered lineage, written into a DataHub Lite file.

Shapes follow what DataHub's dbt source writes: properties with descriptions on most datasets,
schemas, owners, tags, domains and terms on some, upstream lineage with column edges, and a
dbt-style assertion with a run event on every fifth dataset. Deterministic for a given seed.
Written by ``fast_load`` (the rows and edges Lite's own write makes, in minutes for a million
datasets), or with ``through_write`` by Lite's write one MCP at a time (the reference the fast
writer is tested against).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from upstream_dagster.datahub.lite_bulk import bulk_load, fast_load

LAYERS = ("raw", "stg", "int", "fct", "agg")


def urn(i: int) -> str:
    layer = LAYERS[i % len(LAYERS)]
    return f"urn:li:dataset:(urn:li:dataPlatform:dbt,gen.{layer}.{layer}_{i:06d},PROD)"


def _field(dataset: str, path: str) -> str:
    return f"urn:li:schemaField:({dataset},{path})"


def aspects_for(i: int, n: int, rng: random.Random) -> list[tuple[str, str, dict[str, Any]]]:
    me = urn(i)
    out: list[tuple[str, str, dict[str, Any]]] = []
    fields = [f"col_{k}" for k in range(rng.randint(5, 10))]
    if rng.random() < 0.7:
        out.append(
            (
                me,
                "datasetProperties",
                {
                    "name": me.split(",")[1],
                    "description": f"Generated dataset {i}",
                    "customProperties": {"layer": LAYERS[i % 5]},
                },
            )
        )
    out.append(
        (
            me,
            "schemaMetadata",
            {
                "schemaName": f"t{i}",
                "platform": "urn:li:dataPlatform:dbt",
                "version": 0,
                "hash": "",
                "platformSchema": {"com.linkedin.schema.MySqlDDL": {"tableSchema": ""}},
                "fields": [
                    {
                        "fieldPath": f,
                        "nullable": True,
                        "nativeDataType": "INTEGER",
                        "type": {"type": {"com.linkedin.schema.NumberType": {}}},
                    }
                    for f in fields
                ],
            },
        )
    )
    if rng.random() < 0.4:
        out.append(
            (
                me,
                "ownership",
                {
                    "owners": [
                        {"owner": f"urn:li:corpuser:u{rng.randint(1, 50)}", "type": "DATAOWNER"}
                    ]
                },
            )
        )
    out.append((me, "globalTags", {"tags": [{"tag": f"urn:li:tag:tier{1 + i % 3}"}]}))
    if rng.random() < 0.6:
        out.append((me, "domains", {"domains": [f"urn:li:domain:d{i % 7}"]}))
    if rng.random() < 0.3:
        out.append(
            (
                me,
                "glossaryTerms",
                {
                    "terms": [{"urn": "urn:li:glossaryTerm:Revenue"}],
                    "auditStamp": {"time": 0, "actor": "urn:li:corpuser:x"},
                },
            )
        )
    layer = i % len(LAYERS)
    if layer:
        # Each group of five is a raw -> stg -> int -> fct -> agg pipeline; a model also reads
        # up to two same-layer-minus-one datasets from nearby groups, as joins do. Depth stays
        # at four hops, as in real estates, and fan-out stays bounded.
        group = i // len(LAYERS)
        ups = {urn(i - 1)}
        for _ in range(rng.randint(0, 2)):
            other = min(n // len(LAYERS) - 1, max(0, group + rng.randint(-50, 50)))
            ups.add(urn(other * len(LAYERS) + layer - 1))
        ups_sorted = sorted(ups - {me})
        out.append(
            (
                me,
                "upstreamLineage",
                {
                    "upstreams": [{"dataset": u, "type": "TRANSFORMED"} for u in ups_sorted],
                    "fineGrainedLineages": [
                        {
                            "upstreamType": "FIELD_SET",
                            "downstreamType": "FIELD",
                            "upstreams": [_field(ups_sorted[0], "col_0")],
                            "downstreams": [_field(me, "col_0")],
                        }
                    ],
                },
            )
        )
    if i % 5 == 0:
        assertion = f"urn:li:assertion:gen{i:06d}"
        out.append(
            (
                assertion,
                "assertionInfo",
                {
                    "type": "CUSTOM",
                    "customAssertion": {"type": "dbt", "entity": me, "field": _field(me, "col_0")},
                },
            )
        )
        out.append(
            (
                assertion,
                "assertionRunEvent",
                {
                    "timestampMillis": 1_795_000_000_000 + i,
                    "assertionUrn": assertion,
                    "asserteeUrn": me,
                    "runId": "gen",
                    "status": "COMPLETE",
                    "result": {"type": "SUCCESS"},
                    "partitionSpec": {"partition": "FULL_TABLE_SNAPSHOT", "type": "FULL_TABLE"},
                },
            )
        )
    return out


def records(n: int, seed: int = 7) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """The estate's (urn, aspect, value) records, in order; the same for the same n and seed."""
    rng = random.Random(seed)
    return (r for i in range(n) for r in aspects_for(i, n, rng))


def generate(lite_file: Path, n: int, seed: int = 7, *, through_write: bool = False) -> int:
    """Write N datasets into a new Lite file; returns how many aspects were written."""
    load = bulk_load if through_write else fast_load
    return load(lite_file, records(n, seed))
