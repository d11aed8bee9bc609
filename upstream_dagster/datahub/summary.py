"""What DataHub holds, counted the way a person checks an estate landed."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from upstream_dagster.datahub.model import SearchQuery
from upstream_dagster.datahub.protocol import MetadataGraph


@dataclass(frozen=True)
class EstateSummary:
    datasets: int
    assets: int  # twin pairs (a dbt node and its warehouse table) counted once
    dashboards: int
    lineage_edges: int
    column_edges: int
    assertions: int
    failing_assertions: int  # latest run FAILURE: the data broke the check
    owners: int
    owned_assets: int
    # latest run ERROR: the check could not look (no data in its window, no relation)
    unevaluable_assertions: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)

    def lines(self) -> list[str]:
        return [
            f"datasets        {self.datasets:>6}  ({self.assets} assets once twins are merged)",
            f"dashboards      {self.dashboards:>6}",
            f"lineage edges   {self.lineage_edges:>6}  ({self.column_edges} column-level)",
            f"assertions      {self.assertions:>6}  ({self.failing_assertions} failing now"
            + (
                f", {self.unevaluable_assertions} could not evaluate"
                if self.unevaluable_assertions
                else ""
            )
            + ")",
            f"owners          {self.owners:>6}  (on {self.owned_assets} assets)",
        ]


SUMMARY_ASPECTS = ["siblings", "ownership"]


def summarize(
    graph: MetadataGraph,
    datasets: list[str] | None = None,
    aspects: dict[str, dict[str, Any]] | None = None,
) -> EstateSummary:
    """The counts; ``datasets`` and their ``aspects`` (at least SUMMARY_ASPECTS) when the
    caller has read them already."""
    if datasets is None:
        datasets = graph.search(SearchQuery(entity_type="dataset"))
    if aspects is None:
        aspects = graph.get_aspects(datasets, SUMMARY_ASPECTS)
    secondary = {
        u
        for u, a in aspects.items()
        if a.get("siblings") and not a["siblings"].get("primary", False)
    }
    assets = [u for u in datasets if u not in secondary]
    owners = {
        o["owner"]
        for u in assets
        for o in aspects.get(u, {}).get("ownership", {}).get("owners", [])
    }
    owned = sum(1 for u in assets if aspects.get(u, {}).get("ownership", {}).get("owners"))
    edges = graph.lineage_edges()
    runs = graph.assertion_runs()
    return EstateSummary(
        datasets=len(datasets),
        assets=len(assets),
        dashboards=len(graph.search(SearchQuery(entity_type="dashboard"))),
        lineage_edges=len({(e.upstream, e.downstream) for e in edges}),
        column_edges=len({c for e in edges for c in e.columns}),
        assertions=len(graph.search(SearchQuery(entity_type="assertion"))),
        failing_assertions=sum(1 for r in runs if r.result == "FAILURE"),
        unevaluable_assertions=sum(1 for r in runs if r.result not in ("SUCCESS", "FAILURE")),
        owners=len(owners),
        owned_assets=owned,
    )
