"""The evidence ledger and the records an investigation reasons over.

Every claim in a root-cause analysis cites an index into the ledger. A hypothesis that cites
nothing is dropped in code, not by judgement.
"""

from __future__ import annotations

import math
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

    failure_class: str  # rename | column_removed | type_change | code_change | null_jump |
    #                     value_shift | value_change | volume_drop | volume_jump | stale |
    #                     not_rebuilt | lost_match | duplicates | failing_check
    subject: str
    column: str | None
    evidence: int
    at_ms: int | None
    renamed_to: str | None = None
    minor: bool = False  # a change under its threshold: no node is unhealthy for it alone


@dataclass(frozen=True)
class Hypothesis:
    cause: str  # dataset URN
    column: str | None
    failure_class: str
    cites: tuple[int, ...]
    path: tuple[str, ...]  # cause -> ... -> symptom
    renamed_to: str | None = None
    from_memory: bool = False
    code_changed: bool = False  # the cause is a model whose own code changed in the window
    # the cause is a model whose data moved while its code did not: an effect of its inputs
    derived: bool = False


# The components a hypothesis's confidence is computed from, in WEIGHTS' order.
FEATURES = (
    "support",  # share of the observed nodes cause -> symptom that show a failure
    "temporal",  # the cause's failure falls inside the incident's window
    "diversity",  # distinct kinds of hard evidence cited, of three
    "memory",  # an earlier incident named this cause, and it shows again
    "timeline",  # DataHub's schema timeline (or the model's code history) records the change
    "forensic",  # a guarded warehouse query confirms it
    "simulation",  # verified: the fix turns the failing check green, which stays red without it
    "hard",  # something DataHub or the warehouse recorded is cited
    "effect",  # the symptom's own data shows the failure, or its error names the cause's column
    "coincidence",  # no path carries it to what the check measures, or that data did not move
    "spurious",  # the check, re-run on the same data with nothing changed, passes: it is flaky
    "derived",  # a model whose data moved while its code did not: an effect of its inputs
    "grain",  # a query at the check's grain ties it to the failing rows
)
# The prior the fit starts from and is pulled back to: with no evidence a hypothesis is doubted
# (logistic(-4) = 0.02); support, diversity and the symptom showing the effect weigh most, any
# one corroboration (memory, timeline, forensic, simulation, a hard artifact) one unit, the
# check's grain two; a coincidence, a check that does not fail again on the same data, and a
# model that only passed on what its inputs did weigh heavily against. The suites have few
# wrong hypotheses, and data that is nearly always right must not buy certainty where it has
# seen nothing: the fit is the posterior around this prior.
PRIOR = (-4.0, 2.0, 1.0, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0, 3.0, -8.0, -6.0, -4.0, 2.0)
# confidence = logistic(bias + sum(weight x component)), bias first, then FEATURES' order.
# `make calibrate` fits them on the fitting seeds' records (demo 13, subscriptions 23) and
# compares both on the held-out seeds: on 2026-12-02 the fit (13 hypotheses, every one graded
# right or wrong as expected) moved no weight by more than 0.15 and scored held-out ECE 0.004
# against the prior's 0.003, so the prior is kept (docs/measurements.md). Fit again when the
# suites grow; keep what the held-out seeds favour.
WEIGHTS = PRIOR


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
    effect: float = 0.0
    coincidence: float = 0.0
    spurious: float = 0.0
    derived: float = 0.0
    grain: float = 0.0

    @property
    def evidence(self) -> float:
        return self.support * self.temporal * self.diversity

    @property
    def features(self) -> tuple[float, ...]:
        return tuple(float(getattr(self, name)) for name in FEATURES)

    @staticmethod
    def logistic(weights: tuple[float, ...], features: tuple[float, ...]) -> float:
        z = weights[0] + sum(w * x for w, x in zip(weights[1:], features, strict=True))
        return round(1 / (1 + math.exp(-max(-30.0, min(30.0, z)))), 4)

    @property
    def confidence(self) -> float:
        return self.logistic(WEIGHTS, self.features)

    def explain(self) -> str:
        terms = " ".join(
            f"{w:+.2f} x {name} {x:.2f}"
            for name, w, x in zip(FEATURES, WEIGHTS[1:], self.features, strict=True)
            if x
        )
        return f"logistic({WEIGHTS[0]:+.2f} {terms}) = {self.confidence:.2f}"
