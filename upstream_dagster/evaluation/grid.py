"""The evaluation grid: graded investigations in, the table and the targets out. Pure.

A case expects a root cause (a dataset, maybe a column) or an abstention. An investigation is
*rank-1 right* when its top hypothesis names the expected cause, whatever its confidence; it
*concluded* when that confidence reaches the estate's threshold. Correct means: concluded on
the right cause, or abstained where the case expects an abstention. Confident wrong means:
concluded, and not on the right cause.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

TARGETS = {
    "rank1": 0.95,  # root cause at rank 1, of cases with a root cause
    "concluded": 0.90,  # concluded (at or above the threshold), of cases with a root cause
    "ece": 0.10,  # expected calibration error of the top hypothesis's confidence
    "abstention": 1.0,  # correct abstentions, of cases expecting one
    "confident_wrong": 0,
    "separation": 0.30,
    "median_seconds": 20.0,
}


@dataclass(frozen=True)
class Result:
    case: str
    occurrence: int
    expected: str  # "schema.table[.column]" or "abstain"
    fired: bool  # a matching check failed and the reliability job ran
    top: str  # the top hypothesis, "schema.table[.column] (class)", or ""
    top_right: bool
    concluded: bool
    confidence: float
    seconds: float
    reads: int
    memory_used: bool
    headline: str
    recalled: bool = False  # the top hypothesis is the remembered cause, confirmed

    @property
    def expects_abstain(self) -> bool:
        return self.expected == "abstain"

    @property
    def correct(self) -> bool:
        if self.expects_abstain:
            return not self.concluded
        return self.concluded and self.top_right

    @property
    def confident_wrong(self) -> bool:
        return self.concluded and not (self.top_right and not self.expects_abstain)

    @property
    def verdict(self) -> str:
        if not self.fired:
            return "no check fired"
        if self.correct:
            return "correct"
        if self.confident_wrong:
            return "CONFIDENT WRONG"
        if not self.expects_abstain and self.top_right:
            return "right, below threshold"
        return "wrong"


@dataclass(frozen=True)
class Grid:
    results: tuple[Result, ...]

    @property
    def graded(self) -> list[Result]:
        return [r for r in self.results if r.fired or r.expects_abstain]

    @property
    def with_cause(self) -> list[Result]:
        return [r for r in self.graded if not r.expects_abstain]

    @property
    def abstain(self) -> list[Result]:
        return [r for r in self.graded if r.expects_abstain]

    @property
    def rank1(self) -> int:
        return sum(r.top_right for r in self.with_cause)

    @property
    def concluded(self) -> int:
        return sum(r.concluded for r in self.with_cause)

    @property
    def calibrated(self) -> list[Result]:
        """Investigations whose top hypothesis has a confidence to calibrate."""
        return [r for r in self.graded if r.fired and r.top]

    def reliability(self, bins: int = 5) -> list[tuple[float, float, int, float, float]]:
        """(low, high, count, mean confidence, share right) per confidence bin: how often the
        top hypothesis is right at each confidence. Right means the expected cause (a case that
        expects an abstention has no right hypothesis)."""
        out = []
        for b in range(bins):
            low, high = b / bins, (b + 1) / bins
            found = [
                r
                for r in self.calibrated
                if low <= r.confidence < high or (b == bins - 1 and r.confidence == 1.0)
            ]
            if found:
                conf = statistics.fmean(r.confidence for r in found)
                right = statistics.fmean(
                    float(r.top_right and not r.expects_abstain) for r in found
                )
                out.append((low, high, len(found), round(conf, 3), round(right, 3)))
        return out

    @property
    def ece(self) -> float | None:
        """Expected calibration error: the count-weighted gap between confidence and the share
        right, over the bins."""
        n = len(self.calibrated)
        if not n:
            return None
        return round(
            sum(c / n * abs(conf - right) for _, _, c, conf, right in self.reliability()), 3
        )

    @property
    def abstained(self) -> int:
        return sum(r.correct for r in self.abstain)

    @property
    def confident_wrong(self) -> int:
        return sum(r.confident_wrong for r in self.graded)

    @property
    def undetected(self) -> list[Result]:
        return [r for r in self.results if not r.fired and not r.expects_abstain]

    @property
    def separation(self) -> float | None:
        right = [r.confidence for r in self.graded if r.correct and not r.expects_abstain]
        rest = [r.confidence for r in self.graded if not (r.correct and not r.expects_abstain)]
        if not right or not rest:
            return None
        return round(statistics.fmean(right) - statistics.fmean(rest), 3)

    @property
    def median_seconds(self) -> float | None:
        times = [r.seconds for r in self.results if r.fired]
        return round(statistics.median(times), 1) if times else None

    @property
    def cold_reads(self) -> float | None:
        """Median DataHub reads of the investigations that started without memory."""
        found = [r.reads for r in self.results if r.fired and not r.memory_used]
        return statistics.median(found) if found else None

    @property
    def warm_reads(self) -> float | None:
        """Median DataHub reads of the investigations that memory settled."""
        found = [r.reads for r in self.results if r.fired and r.recalled]
        return statistics.median(found) if found else None

    def misses(self) -> list[str]:
        """Every target missed, and by how much."""
        out = []
        n = len(self.with_cause)
        if n and self.rank1 / n < TARGETS["rank1"]:
            out.append(
                f"root cause at rank 1: {self.rank1}/{n} = {self.rank1 / n:.0%}, target "
                f">= {TARGETS['rank1']:.0%} ({n - self.rank1} wrong)"
            )
        if n and self.concluded / n < TARGETS["concluded"]:
            out.append(
                f"concluded: {self.concluded}/{n} = {self.concluded / n:.0%}, target "
                f">= {TARGETS['concluded']:.0%}"
            )
        ece = self.ece
        if ece is not None and ece > TARGETS["ece"]:
            out.append(f"expected calibration error {ece:.3f}, target <= {TARGETS['ece']:.2f}")
        a = len(self.abstain)
        if a and self.abstained < a:
            out.append(f"correct abstention: {self.abstained}/{a}, target {a}/{a}")
        if self.confident_wrong:
            out.append(f"confident wrong conclusions: {self.confident_wrong}, target 0")
        sep = self.separation
        if sep is not None and sep < TARGETS["separation"]:
            out.append(
                f"confidence separation {sep:.3f}, target >= {TARGETS['separation']:.2f} "
                f"(short by {TARGETS['separation'] - sep:.3f})"
            )
        med = self.median_seconds
        if med is not None and med >= TARGETS["median_seconds"]:
            out.append(f"median investigation {med:.1f} s, target < {TARGETS['median_seconds']} s")
        return out

    def gaps(self) -> str:
        """Faults whose expected cause no check caught: a monitoring gap, not a diagnosis."""
        if not self.undetected:
            return ""
        return (
            f"{len(self.undetected)} fault(s) reached a checked asset but fired no check, so "
            "there was nothing to investigate (a monitoring gap, not counted above): "
            + ", ".join(r.case for r in self.undetected)
        )


def fmt(value: float | None, spec: str = "") -> str:
    return "-" if value is None else format(value, spec)


def table(results: Sequence[Result]) -> list[str]:
    """One row per graded investigation, then the overall line and the targets."""
    grid = Grid(tuple(results))
    head = (
        "| case | occ | expected | top hypothesis | conf | verdict | reads | secs |\n"
        "|---|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for r in results:
        lines.append(
            f"| {r.case} | {r.occurrence}{' (warm)' if r.memory_used else ''} | {r.expected} | "
            f"{r.top or '-'} | {r.confidence:.2f} | {r.verdict} | {r.reads} | {r.seconds:.0f} |"
        )
    n, a = len(grid.with_cause), len(grid.abstain)
    lines += [
        "",
        "| measure | result | target |",
        "|---|---|---|",
        f"| investigations | {len(grid.results)} ({len(grid.undetected)} with no check fired) | |",
        f"| root cause at rank 1 | {grid.rank1}/{n} | >= {TARGETS['rank1']:.0%} |",
        f"| concluded | {grid.concluded}/{n} | >= {TARGETS['concluded']:.0%} |",
        f"| correct abstentions | {grid.abstained}/{a} | all |",
        f"| confident wrong conclusions | {grid.confident_wrong} | 0 |",
        f"| confidence separation | {fmt(grid.separation, '.3f')} | >= 0.30 |",
        f"| expected calibration error | {fmt(grid.ece, '.3f')} | <= {TARGETS['ece']:.2f} |",
        f"| median investigation (s, sandbox included) | {fmt(grid.median_seconds)} | < 20 |",
        f"| DataHub reads, median cold / warm (memory confirmed) | {fmt(grid.cold_reads)} / "
        f"{fmt(grid.warm_reads)} | warm <= cold / 4 |",
    ]
    lines += [
        "",
        "| confidence | investigations | mean confidence | share right |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {low:.1f}-{high:.1f} | {count} | {conf:.2f} | {right:.2f} |"
        for low, high, count, conf, right in grid.reliability()
    ]
    misses = grid.misses()
    lines += ["", "Targets missed: " + ("; ".join(misses) if misses else "none.")]
    if grid.gaps():
        lines += ["", grid.gaps()]
    return lines
