"""Which columns and tables hold the same data, so text written for one describes the other.

The rule is the one dbt-osmosis and DataHub's documentation propagation apply: a column inherits
an upstream column's description when it has exactly one upstream column and carries it
unchanged (as it is, renamed, or cast; never computed). The propagation runs both ways along
such edges (DataHub's DOWNSTREAM and UPSTREAM relationships), to at most ``MAX_HOPS`` hops.
Whether a column is carried is read from the model's SQL when DataHub holds it; without SQL
only a column of the same name is taken as carried, since a rename could hide a computation.

A table is a copy of another when every column it has is carried from that one table and its
SQL (if any) neither filters, joins, aggregates nor deduplicates: the same rows and values,
moved (a replica, an export job, a ``SELECT *`` view, a staging model that renames columns).
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

from upstream_dagster.conformance.context import AssetFacts, Column, MetadataContext
from upstream_dagster.conformance.fields import field_name
from upstream_dagster.conformance.sqlfacts import SqlFacts, dialect_for, explain
from upstream_dagster.spec.urns import field_dataset, field_path, field_urn, platform_of

MAX_HOPS = 5  # DataHub's documentation propagation stops at this depth too


def _same_name(a: str, b: str) -> bool:
    """Same field by name: whole, or its last part (a LookML explore's ``view.field``)."""
    x, y = field_name(a).lower(), field_name(b).lower()
    return x == y or x.rsplit(".", 1)[-1] == y.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class Found:
    """Text found for a column or table elsewhere: the text, where it was, the way there."""

    text: str
    source: str  # a schemaField URN (a column) or a dataset URN (a table)
    via: tuple[str, ...]  # datasets passed on the way, nearest first (the source excluded)


class Carry:
    """Column carry edges and table copies over one context, computed once."""

    def __init__(self, ctx: MetadataContext) -> None:
        self.ctx = ctx
        self._sql: dict[str, SqlFacts | None] = {}

    @cached_property
    def feeds(self) -> dict[str, tuple[str, ...]]:
        """Downstream field -> its upstream fields (edges inside one asset's twins left out)."""
        out: dict[str, list[str]] = defaultdict(list)
        for up, down in self.ctx.column_edges:
            if field_dataset(up) != field_dataset(down):
                out[down].append(up)
        return {k: tuple(sorted(set(v))) for k, v in out.items()}

    @cached_property
    def carried_into(self) -> dict[str, tuple[str, ...]]:
        """Upstream field -> the fields that carry it (the edges ``carried_from`` accepts)."""
        out: dict[str, list[str]] = defaultdict(list)
        for down, ups in self.feeds.items():
            if len(ups) == 1 and self.carried_from(down) == ups[0]:
                out[ups[0]].append(down)
        return {k: tuple(sorted(v)) for k, v in out.items()}

    def sql(self, asset: AssetFacts) -> SqlFacts | None:
        if asset.urn not in self._sql:
            adapter = dict(asset.properties).get("manifest_adapter", "")
            platforms = [asset.platform, *(platform_of(t) for t in asset.twins)]
            dialect = next((d for p in platforms if (d := dialect_for(p, adapter))), None)
            self._sql[asset.urn] = explain(asset.sql, dialect) if asset.sql else None
        return self._sql[asset.urn]

    def carried_from(self, field: str) -> str | None:
        """The one upstream field ``field`` carries unchanged, or None."""
        ups = self.feeds.get(field, ())
        if len(ups) != 1:
            return None
        asset = self.ctx.by_urn.get(field_dataset(field) or "")
        facts = self.sql(asset) if asset is not None and asset.sql else None
        path, up_path = field_path(field), field_path(ups[0])
        if facts is not None:
            col = facts.column(field_name(path))
            ok = col is not None and col.kind == "carried" and _same_name(col.source, up_path)
            return ups[0] if ok else None
        return ups[0] if _same_name(path, up_path) else None

    def _column_text(self, field: str) -> str:
        asset = self.ctx.by_urn.get(field_dataset(field) or "")
        path = field_path(field)
        col = next((c for c in asset.columns if c.path == path), None) if asset else None
        return col.description.strip() if col else ""

    def documented(self, asset: AssetFacts, column: Column) -> Found | None:
        """The nearest description of the same column along carry edges, upstream first."""
        start = field_urn(asset.urn, column.path)
        seen = {start}
        queue: deque[tuple[str, tuple[str, ...]]] = deque([(start, ())])
        while queue:
            field, via = queue.popleft()
            if len(via) >= MAX_HOPS:
                continue
            up = self.carried_from(field)
            nexts = ([up] if up else []) + list(self.carried_into.get(field, ()))
            for nxt in nexts:
                if nxt in seen:
                    continue
                seen.add(nxt)
                text = self._column_text(nxt)
                if text:
                    return Found(text, nxt, tuple(via))
                queue.append((nxt, (*via, field_dataset(nxt) or "")))
        return None

    def copy_of(self, asset: AssetFacts) -> str | None:
        """The one dataset ``asset`` is a copy of, or None."""
        if not asset.columns:
            return None
        facts = self.sql(asset) if asset.sql else None
        if facts is not None and facts.reshapes:
            return None
        sources = set()
        for c in asset.columns:
            up = self.carried_from(field_urn(asset.urn, c.path))
            if up is None:
                return None
            sources.add(field_dataset(up))
        return sources.pop() if len(sources) == 1 else None

    @cached_property
    def _copies_of(self) -> dict[str, tuple[str, ...]]:
        out: dict[str, list[str]] = defaultdict(list)
        for a in self.ctx.datasets():
            source = self.copy_of(a)
            if source:
                out[source].append(a.urn)
        return {k: tuple(sorted(v)) for k, v in out.items()}

    def copies(self, asset: AssetFacts) -> Iterator[tuple[AssetFacts, tuple[str, ...]]]:
        """Datasets holding the same data as ``asset`` (copies of it, what it copies, and
        so on), nearest first, each with the datasets between."""
        seen = {asset.urn}
        queue: deque[tuple[str, tuple[str, ...]]] = deque([(asset.urn, ())])
        while queue:
            urn, via = queue.popleft()
            if len(via) >= MAX_HOPS:
                continue
            found = self.ctx.by_urn.get(urn)
            source = self.copy_of(found) if found else None
            for nxt in ([source] if source else []) + list(self._copies_of.get(urn, ())):
                if nxt in seen or nxt not in self.ctx.by_urn:
                    continue
                seen.add(nxt)
                yield self.ctx.by_urn[nxt], via
                queue.append((nxt, (*via, nxt)))
