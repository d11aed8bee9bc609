"""Descriptions a steward would accept, every sentence with its source.

In order: text someone already wrote for the same data (a copy of this table, found along
column lineage as DataHub's documentation propagation and dbt-osmosis find it); else what the
model's SQL does (its filters, joins, grain and computed columns, read with sqlglot); else a
restatement of where the asset sits in the graph, which is labelled as generated and counts as
documentation only where the tier says it accepts generated text. Undocumented columns inherit
the description of the column they carry unchanged. Nothing here lists columns for the sake of
it: a column is named only with what is known about it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from upstream_dagster.conformance.carry import Carry, Found
from upstream_dagster.conformance.context import AssetFacts, MetadataContext
from upstream_dagster.conformance.fields import field_name
from upstream_dagster.conformance.requirements import GENERATED, is_generated
from upstream_dagster.conformance.sqlfacts import ColumnSql, SqlFacts
from upstream_dagster.spec.urns import field_dataset

MAX_COMPUTED = 6  # computed columns explained in a description; the rest are counted
MAX_QUOTE = 200  # characters of an upstream's description quoted for context
CONSUMERS = ("chart", "dashboard")


@dataclass(frozen=True)
class Described:
    text: str
    columns: tuple[tuple[str, str], ...]  # (field path, inherited description)
    evidence: tuple[str, ...]
    generated: bool  # a restatement of the graph, labelled as such
    looked: tuple[str, ...] = ()


def first_sentence(text: str) -> str:
    """The first sentence of the first paragraph that is not a heading, markdown removed."""
    for para in re.split(r"\n\s*\n", text):
        plain = re.sub(r"\*\*|__|`|^\s*[#>]+\s*", "", para.replace("\\_", "_")).strip()
        if plain and not para.lstrip().startswith("#"):
            sentence = re.split(r"(?<=[.!?])\s", plain, maxsplit=1)[0]
            return sentence if len(sentence) <= MAX_QUOTE else sentence[: MAX_QUOTE - 3] + "..."
    return ""


def inherited(ctx: MetadataContext, carry: Carry, a: AssetFacts) -> tuple[
    tuple[tuple[str, str], ...], tuple[str, ...]
]:  # fmt: skip
    """Column descriptions carried from the same column elsewhere, and where each came from,
    grouped by source."""
    found: list[tuple[str, Found]] = []
    for c in a.columns:
        if not c.description:
            hit = carry.documented(a, c)
            if hit is not None:
                found.append((c.path, hit))
    by_source: dict[str, list[str]] = defaultdict(list)
    for path, hit in found:
        by_source[field_dataset(hit.source) or ""].append(field_name(path))
    evidence = []
    for source, names in sorted(by_source.items()):
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        evidence.append(
            f"columns: {shown} carry the same column{'s' if len(names) > 1 else ''} of "
            f"{ctx.label(source)} unchanged (column lineage, one upstream column each, "
            "as DataHub's documentation propagation requires): descriptions inherited"
        )
    return tuple((path, hit.text) for path, hit in found), tuple(evidence)


def _column_sentence(c: ColumnSql) -> str:
    return f"{c.name.lower()} as `{c.expression}`"


def _from_sql(
    ctx: MetadataContext, a: AssetFacts, facts: SqlFacts
) -> tuple[str, tuple[str, ...]] | None:
    """What the SQL does, and the evidence line; None when it only carries columns."""
    computed = [c for c in facts.columns if c.kind != "carried" and c.expression]
    if not computed and not facts.reshapes:
        return None
    ups = [ctx.label(u) for u in a.upstreams if u in ctx.by_urn] or ["its sources"]
    source = ", ".join(ups[:3]) + (" and others" if len(ups) > 3 else "")
    if facts.grain:
        lead = f"One row per {', '.join(facts.grain)}, aggregated from {source}"
    elif facts.latest:
        lead = f"The latest row {facts.latest}, from {source}"
    else:
        lead = f"Built from {source}"
    parts = [lead]
    if facts.joins:
        parts.append("joining " + "; ".join(f"{t} on {k}" if k else t for t, k in facts.joins[:3]))
    if facts.filters:
        parts.append("keeping rows where " + " and ".join(facts.filters[:3]))
    text = ", ".join(parts) + "."
    quoted: tuple[str, ...] = ()
    if len(a.upstreams) == 1 and a.upstreams[0] in ctx.by_urn:
        said = first_sentence(ctx.by_urn[a.upstreams[0]].description)
        if said and not is_generated(ctx.by_urn[a.upstreams[0]].description):
            text += f' {ups[0]}: "{said}"'
            quoted = (f"lineage: the quoted sentence is the description of {ups[0]}",)
    if computed:
        listed = ", ".join(_column_sentence(c) for c in computed[:MAX_COMPUTED])
        more = len(computed) - MAX_COMPUTED
        text += f" It computes {listed}" + (f", and {more} more." if more > 0 else ".")
    read = [
        f"{len(facts.grain)} grouping key(s)" if facts.grain else "",
        f"{len(facts.joins)} join(s)" if facts.joins else "",
        f"{len(facts.filters)} filter(s)" if facts.filters else "",
        f"{len(computed)} computed column(s)" if computed else "",
        "a keep-the-latest-row QUALIFY" if facts.latest else "",
    ]
    sql = "sql: its SQL in DataHub (viewProperties), read with sqlglot: " + ", ".join(
        x for x in read if x
    )
    return text, (sql, *quoted)


def _restated(ctx: MetadataContext, a: AssetFacts) -> str | None:
    """Where the asset sits in the graph, or None when nothing is known around it."""
    kind = (a.subtypes[0] if a.subtypes else "dataset").lower()
    bits = []
    if a.container:
        bits.append(f"in {ctx.display(a.container)}")
    ups = [ctx.label(u) for u in a.upstreams]
    if ups:
        bits.append("built from " + ", ".join(ups[:3]) + (" and others" if len(ups) > 3 else ""))
    readers = [
        ctx.label(d)
        for d in a.downstreams
        if d in ctx.by_urn and ctx.by_urn[d].entity_type in CONSUMERS
    ]
    feeds = [
        ctx.label(d)
        for d in a.downstreams
        if d in ctx.by_urn and ctx.by_urn[d].entity_type == "dataset"
    ]
    if readers:
        bits.append(
            "read by " + ", ".join(readers[:3]) + (" and others" if len(readers) > 3 else "")
        )
    elif feeds:
        bits.append("feeding " + ", ".join(feeds[:3]) + (" and others" if len(feeds) > 3 else ""))
    jobs = [ctx.display(j) for j in a.jobs]
    if jobs:
        bits.append("moved by " + ", ".join(jobs[:2]))
    if not bits:
        return None
    return f"{GENERATED}{a.platform or 'A'} {kind} " + ", ".join(bits) + "."


def describe(ctx: MetadataContext, carry: Carry, a: AssetFacts) -> Described | tuple[str, ...]:
    """A description for ``a`` with its sources; or what was looked at, when nothing can be
    said at all."""
    columns, column_evidence = inherited(ctx, carry, a)
    looked: list[str] = []
    copies = list(carry.copies(a))
    for other, via in copies:
        if other.description and not is_generated(other.description):
            way = f" via {', '.join(ctx.label(v) for v in via)}" if via else ""
            evidence = (
                f"copy: {ctx.label(other.urn)} holds the same data (every column carried "
                f"unchanged{way}): its description, word for word",
                *column_evidence,
            )
            return Described(other.description, columns, evidence, False)
    looked.append(
        "copies: "
        + (", ".join(f"{ctx.label(o.urn)} (undocumented)" for o, _ in copies[:3]) or "none")
    )
    facts = carry.sql(a) if a.sql else None
    said = _from_sql(ctx, a, facts) if facts is not None else None
    if said is not None:
        return Described(said[0], columns, (*said[1], *column_evidence), False)
    looked.append(
        "sql: "
        + (
            "none in DataHub"
            if not a.sql
            else "sqlglot cannot read it"
            if facts is None
            else "it only carries columns"
        )
    )
    restated = _restated(ctx, a)
    if restated is None:
        looked.append("graph: no container, lineage, consumer or job to restate")
        return tuple(looked)
    evidence = (
        "generated: restates where it sits in the graph (container, lineage, consumers, "
        "jobs), labelled; counts only where the tier accepts generated text",
        *column_evidence,
    )
    return Described(restated, columns, evidence, True, tuple(looked))
