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

from upstream_dagster.evaluation.runner import replay_case
from upstream_dagster.evaluation.scenario import Scenario
from upstream_dagster.reliability.evidence import FEATURES, Score
from upstream_dagster.spec.models import EstateSpec
from upstream_dagster.state import records


@dataclass(frozen=True)
class Sample:
    case: str
    features: tuple[float, ...]
    right: bool


def samples(paths: Iterable[Path], spec: EstateSpec) -> list[Sample]:
    """One sample per fired investigation that stated a hypothesis."""
    from upstream_dagster.evaluation.replay import replay

    out = []
    for path in sorted(paths):
        record = records.load(path)
        case = Scenario.model_validate(record["scenario"])
        results = replay_case(case, record, spec)
        for occ, r in zip(record["occurrences"], results, strict=True):
            if not occ["fired"] or not r.top:
                continue
            v = replay(occ["investigation"], spec)
            out.append(Sample(r.case, v.ranked[0][1].features, r.top_right))
    return out


def _sigmoid(z: float) -> float:
    return 1 / (1 + math.exp(-max(-30.0, min(30.0, z))))


def fit(data: Sequence[Sample], ridge: float = 1.0, steps: int = 20000) -> tuple[float, ...]:
    """(bias, *weights) maximizing the penalized log-likelihood (gradient ascent)."""
    k = len(FEATURES)
    w = [0.0] * (k + 1)
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
            penalty = ridge * w[i] if i else 0.0
            w[i] += rate * (grad[i] - penalty) / n
    return tuple(round(x, 3) for x in w)


def report(data: Sequence[Sample], weights: tuple[float, ...]) -> list[str]:
    """The fitted weights, then each sample's confidence under them, binned."""
    lines = ["| feature | weight |", "|---|---|", f"| (bias) | {weights[0]:+.3f} |"]
    lines += [f"| {f} | {w:+.3f} |" for f, w in zip(FEATURES, weights[1:], strict=True)]
    scored = [(Score.logistic(weights, s.features), s.right) for s in data]
    lines += ["", "| confidence | samples | mean confidence | share right |", "|---|---|---|---|"]
    for b in range(5):
        low, high = b / 5, (b + 1) / 5
        found = [(c, r) for c, r in scored if low <= c < high or (b == 4 and c == 1.0)]
        if found:
            mean = sum(c for c, _ in found) / len(found)
            right = sum(r for _, r in found) / len(found)
            lines.append(f"| {low:.1f}-{high:.1f} | {len(found)} | {mean:.2f} | {right:.2f} |")
    return lines
