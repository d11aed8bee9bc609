"""The evidence ledger and the records an investigation reasons over.

Every claim in a root-cause analysis cites an index into the ledger. A hypothesis that cites
nothing is dropped in code, not by judgement.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Kinds whose evidence is a hard artifact: something DataHub or the warehouse recorded.
HARD = frozenset({"timeline", "forensic", "run_record", "profile", "assertion"})


@dataclass(frozen=True)
class Evidence:
    index: int
    kind: str  # assertion | timeline | profile | run_record | lineage | forensic | memory |
    #            refused_query | simulation
    subject: str  # the dataset URN it is about
    claim: str
    column: str | None = None
    at_ms: int | None = None
    detail: tuple[tuple[str, str], ...] = ()

    @property
    def hard(self) -> bool:
        return self.kind in HARD

    def as_json(self) -> dict[str, object]:
        return {
            "index": self.index,
            "kind": self.kind,
            "subject": self.subject,
            "column": self.column,
            "claim": self.claim,
            "at_ms": self.at_ms,
            "detail": dict(self.detail),
        }


@dataclass
class Ledger:
    items: list[Evidence] = field(default_factory=list)

    def add(
        self,
        kind: str,
        subject: str,
        claim: str,
        column: str | None = None,
        at_ms: int | None = None,
        **detail: object,
    ) -> int:
        index = len(self.items)
        self.items.append(
            Evidence(
                index,
                kind,
                subject,
                claim,
                column,
                at_ms,
                tuple(sorted((k, str(v)) for k, v in detail.items())),
            )
        )
        return index

    def __getitem__(self, index: int) -> Evidence:
        return self.items[index]


@dataclass(frozen=True)
class Finding:
    """Something wrong with one node, with the evidence that shows it."""

    failure_class: str  # rename | column_removed | type_change | null_jump | value_shift |
    #                     volume_drop | volume_jump | stale | not_rebuilt | failing_check
    subject: str
    column: str | None
    evidence: int
    at_ms: int | None
    renamed_to: str | None = None


@dataclass(frozen=True)
class Hypothesis:
    cause: str  # dataset URN
    column: str | None
    failure_class: str
    cites: tuple[int, ...]
    path: tuple[str, ...]  # cause -> ... -> symptom
    renamed_to: str | None = None
    from_memory: bool = False


@dataclass(frozen=True)
class Score:
    support: float
    temporal: float
    diversity: float
    memory: float
    timeline: float
    forensic: float
    simulation: float
    hard: bool

    @property
    def evidence(self) -> float:
        return self.support * self.temporal * self.diversity

    @property
    def confidence(self) -> float:
        value = (
            0.60 * self.evidence
            + 0.10 * self.memory
            + 0.10 * self.timeline
            + 0.10 * self.forensic
            + 0.10 * self.simulation
        )
        return round(value * (1.0 if self.hard else 0.6), 4)

    def explain(self) -> str:
        return (
            f"0.60 x evidence {self.evidence:.2f} (support {self.support:.2f} x temporal "
            f"{self.temporal:.2f} x diversity {self.diversity:.2f}) + 0.10 x memory "
            f"{self.memory:.0f} + 0.10 x timeline {self.timeline:.0f} + 0.10 x forensic "
            f"{self.forensic:.0f} + 0.10 x simulation {self.simulation:.0f}"
            + ("" if self.hard else ", x 0.6: no hard artifact")
            + f" = {self.confidence:.2f}"
        )
