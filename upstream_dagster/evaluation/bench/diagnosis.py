"""Does the diagnosis know when it does not know? The held-out random suites, per estate.

Replays recorded random suites (no DataHub, no warehouse) and prints, for each estate: rank 1
over the cases with a cause, abstentions over the coincidences, confident wrong conclusions,
confidence separation, the expected calibration error with its reliability table (several
bins), and the median investigation time; then the same split by kind of draw (classic, small
partial, coincidence), so a good total cannot hide a kind that fails:

    python -m upstream_dagster.evaluation.bench.diagnosis DIR=ESTATE_FILE ... [--bins 5]

Each DIR holds one seed's records (`upstream eval --random N --seed S --records ...`); the
records carry their scenario, so the draw is not repeated. Use seeds the weights were not
fitted on.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

from upstream_dagster.evaluation.grid import TARGETS, Grid, Result, fmt
from upstream_dagster.evaluation.runner import replay_case
from upstream_dagster.evaluation.scenario import Scenario
from upstream_dagster.spec import load_estate
from upstream_dagster.state import records


def kind_of(case: Scenario) -> str:
    """Which kind of draw a random case is, from what the draw put in it."""
    if case.expect.abstain:
        return "coincidence"
    return "small partial" if "a small " in case.description else "classic"


def replayed(folder: Path, estate: Path) -> list[tuple[str, Result]]:
    spec = load_estate(estate)
    out = []
    for path in sorted(folder.glob("*.json")):
        record = records.load(path)
        case = Scenario.model_validate(record["scenario"])
        out += [(kind_of(case), r) for r in replay_case(case, record, spec)]
    return out


def row(name: str, grid: Grid) -> str:
    n, a = len(grid.with_cause), len(grid.abstain)
    return (
        f"| {name} | {len(grid.results)} | {grid.rank1}/{n} | {grid.abstained}/{a} | "
        f"{grid.confident_wrong} | {fmt(grid.separation, '.3f')} | {fmt(grid.ece, '.3f')} | "
        f"{fmt(grid.median_seconds, '.1f')} |"
    )


def report(by_estate: dict[str, list[tuple[str, Result]]], bins: int) -> list[str]:
    head = [
        "| estate / kind | investigations | rank 1 | abstentions | confident wrong | "
        "separation | ECE | median s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines = list(head)
    for estate, found in by_estate.items():
        grid = Grid(tuple(r for _, r in found))
        lines.append(row(f"**{estate}**", grid))
        kinds: dict[str, list[Result]] = defaultdict(list)
        for kind, r in found:
            kinds[kind].append(r)
        lines += [row(f"{estate}: {k}", Grid(tuple(rs))) for k, rs in sorted(kinds.items())]
    for estate, found in by_estate.items():
        grid = Grid(tuple(r for _, r in found))
        lines += ["", f"Reliability on {estate} ({bins} bins, top hypothesis right or not):", ""]
        lines += ["| confidence | investigations | mean confidence | share right |"]
        lines += ["|---|---|---|---|"]
        lines += [
            f"| {lo:.2f}-{hi:.2f} | {c} | {conf:.3f} | {right:.3f} |"
            for lo, hi, c, conf, right in grid.reliability(bins)
        ]
        misses = grid.misses()
        lines.append("")
        lines.append(f"Missed on {estate}: " + ("; ".join(misses) if misses else "none."))
    lines += [
        "",
        f"Targets: rank 1 >= {TARGETS['rank1']:.0%}, every coincidence abstained, confident "
        f"wrong 0, separation >= {TARGETS['separation']}, ECE <= {TARGETS['ece']}, median < "
        f"{TARGETS['median_seconds']:.0f} s.",
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suites", nargs="+", help="DIR=ESTATE_FILE, one per recorded seed")
    parser.add_argument("--bins", type=int, default=5, help="Bins of the reliability table.")
    args = parser.parse_args()
    by_estate: dict[str, list[tuple[str, Result]]] = {}
    for item in args.suites:
        folder, _, estate = item.partition("=")
        path = Path(estate or "estate.yaml")
        here = path.resolve().parent == Path.cwd().resolve()
        label = "demo" if here else path.resolve().parent.name
        by_estate.setdefault(label, []).extend(replayed(Path(folder), path))
    print("\n".join(report(by_estate, args.bins)))


if __name__ == "__main__":
    main()
