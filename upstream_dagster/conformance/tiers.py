"""Which tier each dataset belongs to, as resolved from DataHub search."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property


@dataclass(frozen=True)
class SelectorHit:
    tier: str
    index: int  # position of the selector in the tier's `match` list
    matched: int
    label: str = ""  # the selector as estate.yaml wrote it

    def name(self) -> str:
        return f"{self.tier} match[{self.index}]" + (f" ({self.label})" if self.label else "")


@dataclass(frozen=True)
class Scope:
    tier_of: tuple[tuple[str, str], ...]  # (asset urn, tier name), sorted
    selector_hits: tuple[SelectorHit, ...]
    unmatched: tuple[str, ...]  # datasets no tier selects: reported, not dropped

    @cached_property
    def tiers(self) -> Mapping[str, str]:
        return dict(self.tier_of)
