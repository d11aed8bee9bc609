"""Fit the critic's confidence to how often it is right: `upstream calibrate`.

Each recorded investigation (the random suites' records, on any estate) is replayed, and its
top hypothesis's evidence components (`reliability.evidence.Score`) are paired with whether it
named the fault's true location. A logistic regression with a small ridge penalty maps the
components to a probability; its weights go into `reliability.evidence.WEIGHTS`, and the grid's
reliability table on seeds the fit never saw says whether they hold. Pure Python: the data is a
few hundred rows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from upstream_dagster.evaluation.scenario import Scenario
from upstream_dagster.reliability.evidence import FEATURES, PRIOR, Hypothesis, Score
from upstream_dagster.spec.models import EstateSpec
from upstream_dagster.spec.urns import name_matches
from upstream_dagster.state import records


@dataclass(frozen=True)
class Sample:
    case: str
    features: tuple[float, ...]
    right: bool


def samples(paths: Iterable[Path], spec: EstateSpec) -> list[Sample]:
    """One sample per hypothesis each fired investigation stated, the runners-up included:
    confidence is the probability that a hypothesis names the cause, whatever its rank, and the
    runners-up are most of the wrong ones."""
    from upstream_dagster.evaluation.replay import replay

    out = []
    for path in sorted(paths):
        record = records.load(path)
        for occ, case in zip(
            record["occurrences"],
            Scenario.model_validate(record["scenario"]).occurrences,
            strict=True,
        ):
            if not occ["fired"]:
                continue
            v = replay(occ["investigation"], spec)
            for h, score in v.ranked:
                out.append(Sample(case.name, score.features, names_cause(case, h)))
    return out


def names_cause(case: Scenario, h: Hypothesis) -> bool:
    cause = case.expect.root_cause
    if case.expect.abstain or cause is None:
        return False
    column = cause.column is None or (h.column or "").lower() == cause.column.lower()
    return name_matches(h.cause, cause.dataset) and column


def _sigmoid(z: float) -> float:
    return 1 / (1 + math.exp(-max(-30.0, min(30.0, z))))


def fit(data: Sequence[Sample], ridge: float = 1.0, steps: int = 20000) -> tuple[float, ...]:
    """(bias, *weights) maximizing the log-likelihood less a ridge penalty on each weight's
    distance from `PRIOR` (the posterior mode under a Gaussian prior), so that data with few
    wrong answers cannot buy certainty where it has seen nothing (gradient ascent)."""
    k = len(FEATURES)
    w = list(PRIOR)
    rate = 0.5
    n = max(len(data), 1)
    for _ in range(steps):
        grad = [0.0] * (k + 1)
        for s in data:
            p = _sigmoid(w[0] + sum(wi * xi for wi, xi in zip(w[1:], s.features, strict=True)))
            err = float(s.right) - p
            grad[0] += err
            for i, x in enumerate(s.features, 1):
                grad[i] += err * x
        for i in range(k + 1):
            w[i] += rate * (grad[i] - ridge * (w[i] - PRIOR[i])) / n
    return tuple(round(x, 3) for x in w)


def report(data: Sequence[Sample], weights: tuple[float, ...]) -> list[str]:
    """The fitted weights, then each sample's confidence under them, binned."""
    lines = ["| feature | prior | fitted |", "|---|---|---|"]
    lines += [
        f"| {f} | {p:+.2f} | {w:+.3f} |"
        for f, p, w in zip(("(bias)", *FEATURES), PRIOR, weights, strict=True)
    ]
    scored = _scored(data, weights)
    lines += ["", "| confidence | samples | mean confidence | share right |", "|---|---|---|---|"]
    for b in range(5):
        low, high = b / 5, (b + 1) / 5
        found = [(c, r) for c, r in scored if low <= c < high or (b == 4 and c == 1.0)]
        if found:
            mean = sum(c for c, _ in found) / len(found)
            right = sum(r for _, r in found) / len(found)
            lines.append(f"| {low:.1f}-{high:.1f} | {len(found)} | {mean:.2f} | {right:.2f} |")
    return lines


def _scored(data: Sequence[Sample], weights: tuple[float, ...]) -> list[tuple[float, bool]]:
    return [(Score.logistic(weights, s.features), s.right) for s in data]


def ece(data: Sequence[Sample], weights: tuple[float, ...], bins: int = 5) -> float:
    """Expected calibration error of ``weights`` on ``data``: the sample-weighted gap between
    mean confidence and the share right, over equal-width bins."""
    scored = _scored(data, weights)
    total = 0.0
    for b in range(bins):
        low, high = b / bins, (b + 1) / bins
        found = [(c, r) for c, r in scored if low <= c < high or (b == bins - 1 and c == 1.0)]
        if found:
            gap = sum(c for c, _ in found) / len(found) - sum(r for _, r in found) / len(found)
            total += len(found) * abs(gap)
    return total / len(scored) if scored else 0.0


def check(data: Sequence[Sample], fitted: tuple[float, ...], conclude: float = 0.7) -> list[str]:
    """The prior and the fitted weights side by side on held-out samples the fit never saw:
    ECE, wrong hypotheses at or above ``conclude`` (confident wrong), right ones below it (a
    cause the weights would no longer conclude), and which to keep: the lower ECE, the prior
    on a tie or when the fit adds a confident wrong."""
    rows = ["| weights | samples | ECE | confident wrong | right but below conclusion |"]
    rows.append("|---|---|---|---|---|")
    seen = {}
    for name, w in (("prior", PRIOR), ("fitted", fitted)):
        scored = _scored(data, w)
        wrong = sum(1 for c, r in scored if c >= conclude and not r)
        shy = sum(1 for c, r in scored if c < conclude and r)
        seen[name] = (round(ece(data, w), 3), wrong, shy)
        rows.append(f"| {name} | {len(scored)} | {seen[name][0]:.3f} | {wrong} | {shy} |")
    better = seen["fitted"] < seen["prior"]
    keep = "the fitted weights" if better else "the prior (the fit does no better held out)"
    rows += ["", f"keep: {keep}"]
    return rows
