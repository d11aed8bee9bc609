"""The dial: estate.yaml scored against what DataHub holds.

Tier selectors resolve through DataHub search on every run (`datahub.tier_search`); the score
itself is the pure core's (`conformance.score`)."""

from __future__ import annotations

import hashlib
import json

from upstream_dagster.conformance.context import MetadataContext
from upstream_dagster.conformance.detection import Detection, with_detection
from upstream_dagster.conformance.risk import Violation, rank_violations
from upstream_dagster.conformance.score import Dial, score
from upstream_dagster.datahub.model import SearchQuery
from upstream_dagster.datahub.protocol import MetadataGraph
from upstream_dagster.datahub.readpath import read_context
from upstream_dagster.datahub.summary import SUMMARY_ASPECTS, summarize
from upstream_dagster.datahub.tier_search import resolve_scope
from upstream_dagster.spec.models import EstateSpec


def dial_of(graph: MetadataGraph, spec: EstateSpec, ctx: MetadataContext) -> Dial:
    """Score ``ctx`` with tiers resolved by DataHub search on ``graph``."""
    return score(ctx, spec, resolve_scope(graph, spec, ctx), ctx.as_of_ms)


def read_and_score(
    graph: MetadataGraph, spec: EstateSpec, as_of_ms: int, detection: Detection | None = None
) -> Dial:
    """The dial as DataHub reads now, with the last fault-detection measurement attached."""
    return dial_of(graph, spec, with_detection(read_context(graph, as_of_ms), detection, spec))


def ranked(ctx: MetadataContext, spec: EstateSpec, dial: Dial) -> tuple[Violation, ...]:
    """Every failing or unevaluable check, ranked by risk."""
    return tuple(rank_violations(ctx, spec, dial.results, dial.as_of_ms))


# What a steward or a write-back changes on a dataset, beside what the summary counts.
GOVERNED = ["editableDatasetProperties", "domains", "glossaryTerms", "globalTags", "ownership"]


def graph_version(graph: MetadataGraph) -> str:
    """A digest of what DataHub holds now: the estate summary (datasets, twins, lineage,
    assertions and their results, owners) and every dataset's governed aspects (descriptions,
    domains, terms, tags, owners), so a change a steward makes in DataHub moves it too. The
    DataHub source asset's data version."""
    datasets = graph.search(SearchQuery(entity_type="dataset"))
    aspects = graph.get_aspects(datasets, sorted({*SUMMARY_ASPECTS, *GOVERNED}))  # one read
    lines = summarize(graph, datasets, aspects).lines()
    governed = {u: {k: v for k, v in a.items() if k in GOVERNED} for u, a in aspects.items()}
    blob = json.dumps(governed, sort_keys=True, default=str)
    return hashlib.sha256("\n".join([*lines, blob]).encode()).hexdigest()[:16]
