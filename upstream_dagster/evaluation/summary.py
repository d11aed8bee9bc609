"""Every committed suite in one table: `upstream eval-summary`.

Replays the shipped cases and each random suite's records on its own estate (no DataHub, no
warehouse, no key), prints one row per suite and one for all of them together, with the
reliability table over everything. The numbers issue targets are judged on are these.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from upstream_dagster.evaluation.estates import case_estate
from upstream_dagster.evaluation.grid import TARGETS, Grid, Result, fmt
from upstream_dagster.evaluation.runner import load_cases, replay_case
from upstream_dagster.evaluation.scenario import Scenario
from upstream_dagster.spec import load_estate
from upstream_dagster.state import records

SECOND = "evals/estates/subscriptions"


@dataclass(frozen=True)
class Suite:
    name: str
    estate: Path
    results: tuple[Result, ...]


def suites(root: Path) -> list[Suite]:
    """The shipped cases and every recorded random suite, on both estates."""
    demo, second = root / "estate.yaml", root / SECOND / "estate.yaml"
    out = []
    cases = load_cases(sorted((root / "evals/cases").glob("*.yaml")))
    shipped: list[Result] = []
    for case in cases:
        spec = load_estate(case_estate(root, case.estate) / "estate.yaml" if case.estate else demo)
        shipped += replay_case(
            case, records.load(root / "evals/records" / f"{case.name}.json"), spec
        )
    out.append(Suite("shipped cases", demo, tuple(shipped)))
    for folder, estate, label in [
        *((d, demo, f"demo {d.name}") for d in sorted((root / "evals/records").glob("random-*"))),
        *(
            (d, second, f"subscriptions {d.name}")
            for d in sorted((root / "evals/records/subscriptions").glob("random-*"))
        ),
    ]:
        spec = load_estate(estate)
        found: list[Result] = []
        for path in sorted(folder.glob("*.json")):
            record = records.load(path)
            found += replay_case(Scenario.model_validate(record["scenario"]), record, spec)
        out.append(Suite(label, estate, tuple(found)))
    return out


def row(name: str, grid: Grid) -> str:
    n, a = len(grid.with_cause), len(grid.abstain)
    return (
        f"| {name} | {len(grid.results)} | {n} | {grid.rank1}/{n} | {grid.concluded}/{n} | "
        f"{grid.abstained}/{a} | {grid.confident_wrong} | {fmt(grid.separation, '.3f')} | "
        f"{fmt(grid.ece, '.3f')} | {fmt(grid.median_seconds, '.1f')} |"
    )


def table(found: list[Suite]) -> list[str]:
    lines = [
        "| suite | faults | fired, with a cause | rank 1 | concluded | abstentions | "
        "confident wrong | separation | ECE | median s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [row(s.name, Grid(s.results)) for s in found]
    everything = Grid(tuple(r for s in found for r in s.results))
    lines.append(row("**all**", everything))
    lines += [
        "",
        f"Targets: rank 1 >= {TARGETS['rank1']:.0%}, concluded >= {TARGETS['concluded']:.0%}, "
        f"confident wrong 0, separation >= {TARGETS['separation']}, ECE <= {TARGETS['ece']}, "
        f"median < {TARGETS['median_seconds']:.0f} s.",
        "",
        "| confidence | investigations | mean confidence | share right |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {lo:.1f}-{hi:.1f} | {c} | {conf:.2f} | {right:.2f} |"
        for lo, hi, c, conf, right in everything.reliability()
    ]
    misses = everything.misses()
    lines += ["", "Missed over all suites: " + ("; ".join(misses) if misses else "none.")]
    return lines
