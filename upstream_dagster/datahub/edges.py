"""Read lineage edges out of the aspects that carry them.

Datasets carry ``upstreamLineage`` (with fine-grained column edges); charts, dashboards and jobs
carry their inputs and outputs. Both the simplified JSON that DataHub Lite stores and the
``*Edges`` variants are understood.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import Any

from upstream_dagster.datahub.model import ColumnEdge, Json, LineageEdge
from upstream_dagster.spec.urns import field_dataset

LINEAGE_ASPECTS = ("upstreamLineage", "chartInfo", "dashboardInfo", "dataJobInputOutput")


def _urns(value: Json, plain: str, edges: str) -> list[str]:
    found: list[str] = []
    for item in value.get(plain) or []:
        found.append(item if isinstance(item, str) else str(item.get("string", "")))
    for item in value.get(edges) or []:
        found.append(str(item.get("destinationUrn", "")))
    return [u for u in dict.fromkeys(found) if u]


def _upstream_lineage(urn: str, value: Json) -> Iterator[LineageEdge]:
    columns: dict[str, list[ColumnEdge]] = {}
    for fine in value.get("fineGrainedLineages") or []:
        for up in fine.get("upstreams") or []:
            for down in fine.get("downstreams") or []:
                ds = field_dataset(up)
                if ds:
                    columns.setdefault(ds, []).append(ColumnEdge(up, down))
    for up in value.get("upstreams") or []:
        dataset = str(up.get("dataset", ""))
        if dataset:
            # interned: a million datasets' edges name each asset (and one of a few edge
            # types) by the one string the asset search read, not by a copy per edge
            yield LineageEdge(
                sys.intern(dataset),
                sys.intern(urn),
                "upstreamLineage",
                sys.intern(str(up.get("type", "TRANSFORMED"))),
                tuple(columns.get(dataset, ())),
            )


def edges_from_aspect(urn: str, aspect: str, value: Json) -> Iterator[LineageEdge]:
    if aspect == "upstreamLineage":
        yield from _upstream_lineage(urn, value)
    elif aspect == "chartInfo":
        for up in _urns(value, "inputs", "inputEdges"):
            yield LineageEdge(up, urn, aspect, "CONSUMES")
    elif aspect == "dashboardInfo":
        for up in _urns(value, "datasets", "datasetEdges") + _urns(value, "charts", "chartEdges"):
            yield LineageEdge(up, urn, aspect, "CONSUMES")
    elif aspect == "dataJobInputOutput":
        for up in _urns(value, "inputDatasets", "inputDatasetEdges"):
            yield LineageEdge(up, urn, aspect, "INPUT")
        for down in _urns(value, "outputDatasets", "outputDatasetEdges"):
            yield LineageEdge(urn, down, aspect, "OUTPUT")


def edges_from_rows(rows: Iterable[tuple[str, str, Any]]) -> list[LineageEdge]:
    out: list[LineageEdge] = []
    for urn, aspect, value in rows:
        out.extend(edges_from_aspect(urn, aspect, value))
    return out
