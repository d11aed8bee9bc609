"""Monitor rules: pure judgements over numbers the warehouse and DataHub supplied."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Observation:
    """What a monitor measured on one column (or the table, for volume)."""

    observed: float | None  # None: nothing to measure (the column or the day is missing)
    baseline: float | None = None  # trailing average, or the previous observation
    missing: str = ""  # why there was nothing to measure


@dataclass(frozen=True)
class Judgement:
    passed: bool
    message: str
    evaluable: bool = True  # False: the monitor could not see what it checks (never a pass)


def _fmt(value: float | None) -> str:
    return "none" if value is None else f"{value:,.4g}"


def judge(rule: str, obs: Observation, threshold: float) -> Judgement:
    if obs.missing:
        return Judgement(False, obs.missing, evaluable=False)
    value, base = obs.observed, obs.baseline
    if rule == "zero_values":
        ok = value is not None and value != 0
        return Judgement(ok, f"last complete day total {_fmt(value)}")
    if rule == "drop_vs_trailing_average":
        if base is None or base == 0:
            return Judgement(True, f"day total {_fmt(value)}; no trailing average to compare")
        drop = 1 - (value or 0) / base
        return Judgement(
            drop <= threshold,
            f"day total {_fmt(value)} vs trailing average {_fmt(base)}: "
            + (f"{drop:.0%} below" if drop >= 0 else f"{-drop:.0%} above")
            + f" (limit {threshold:.0%} below)",
        )
    if rule == "volume":
        if base is None or base == 0:
            return Judgement(True, f"{_fmt(value)} rows; baseline recorded")
        change = (value or 0) / base - 1
        return Judgement(
            abs(change) <= threshold,
            f"{_fmt(value)} rows vs {_fmt(base)} expected: {change:+.0%} (limit ±{threshold:.0%})",
        )
    if rule == "null_rate_jump":
        if base is None:
            return Judgement(True, f"NULL share {_fmt(value)}; baseline recorded")
        rise = (value or 0) - base
        return Judgement(
            rise <= threshold,
            f"NULL share {_fmt(value)} vs {_fmt(base)} before: {rise:+.0%} "
            f"(limit +{threshold:.0%})",
        )
    raise ValueError(f"unknown monitor rule {rule!r}")
