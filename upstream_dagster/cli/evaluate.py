"""Commands that break the estate on purpose and grade the reliability controller."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from upstream_dagster import settings as settings_mod
from upstream_dagster.cli.app import app, guarded, lazy, out, plain, running
from upstream_dagster.errors import UpstreamError

if TYPE_CHECKING:
    from upstream_dagster import healing
    from upstream_dagster.evaluation import breakage, suite
else:  # imported when a command first uses them
    suite = lazy("upstream_dagster.evaluation.suite")
    breakage = lazy("upstream_dagster.evaluation.breakage")
    healing = lazy("upstream_dagster.healing")


@app.command("break")
def break_(
    scenario: Annotated[
        Path, typer.Argument(help="A scenario file, e.g. scenarios/vendor_drift.yaml")
    ],
) -> None:
    """Apply a scenario's faults to the warehouse, rebuild, and re-ingest into DataHub."""
    settings = settings_mod.load()
    from upstream_dagster.evaluation.scenario import load_scenario  # sqlglot: only here

    sc = guarded(lambda: load_scenario(scenario))

    def run() -> breakage.BreakReport:
        with running(f"breaking the estate with {sc.name} (faults, dbt build, DataHub)"):
            return breakage.break_estate(settings, sc)

    report = guarded(run)
    out.print(f"[bold]{sc.name}[/] applied:")
    for sql in report.statements:
        plain(f"  {sql}")
    for table in report.skipped:
        out.print(f"  {table} was not rebuilt")
    for urn in report.flaky:
        out.print(f"  {urn} reported a failure with no change in the data")
    if report.build_failed:
        out.print(
            f"The refresh failed (run {report.run_id}): dbt could not build a model. DataHub "
            "holds a failing build check with dbt's error; the failed_builds sensor opens the "
            "incident, or run `upstream investigate` now."
        )
    else:
        out.print(
            "Every job stayed green. The failing_assertions sensor picks up what failed in "
            "DataHub; or run `upstream investigate` now."
        )


@app.command()
def heal(
    forget: Annotated[
        bool, typer.Option("--forget", help="Also remove the memory Upstream wrote.")
    ] = False,
) -> None:
    """Restore the clean estate (warehouse, deployed dbt project, DataHub's ingested metadata).

    What Upstream itself wrote into DataHub (incidents, runbooks, memory) is kept, unless
    --forget is given."""
    settings = settings_mod.load()

    def run() -> healing.Healed:
        with running("restoring the clean estate (what changed, and what is downstream of it)"):
            return healing.heal(settings, forget)

    healed = guarded(run)
    for seed in healed.reseeded:
        out.print(f"  reloaded the seed {seed} with a full refresh (its table had changed shape)")
    plain(f"  rebuilt {healed.rebuilt or 'the whole project'} (run {healed.run_id})")
    out.print(
        "healed: clean warehouse and metadata rebuilt"
        + (f"; {healed.removed} memory properties removed" if forget else "; memory kept")
    )


@app.command("eval")
def eval_(
    cases: Annotated[
        Path | None,
        typer.Option(help="A directory of case files (default: evals/cases).", file_okay=False),
    ] = None,
    random_: Annotated[
        int, typer.Option("--random", help="Draw N seeded random faults instead of cases.")
    ] = 0,
    seed: Annotated[int, typer.Option(help="The seed of --random's draw.")] = 7,
    replay: Annotated[
        bool,
        typer.Option(
            "--replay",
            help="Recompute the verdicts from the recorded reads: no DataHub, no warehouse.",
        ),
    ] = False,
    jobs: Annotated[int, typer.Option(help="Cases run at once, each on its own copy.")] = 2,
    records: Annotated[
        Path | None, typer.Option(help="Where records go (default: evals/records).")
    ] = None,
    readme: Annotated[
        bool, typer.Option("--readme", help="Write the grid into docs/evaluation.md as well.")
    ] = False,
) -> None:
    """Grade the reliability controller on cases, live or replayed; exits 1 on a missed target.

    Live, each case runs on a fresh copy of the estate; --replay recomputes the verdicts from
    the recorded reads with no DataHub and no warehouse. Prints the grid."""
    settings = settings_mod.load()
    missed = guarded(
        lambda: suite.main(
            settings,
            cases or settings.project_root / "evals" / "cases",
            random_,
            seed,
            replay,
            jobs,
            records or settings.project_root / "evals" / "records",
            readme,
            out,
        )
    )
    raise typer.Exit(1 if missed else 0)


@app.command()
def calibrate(
    suite_dirs: Annotated[
        list[str],
        typer.Argument(
            help="Folders of random-suite records, each DIR or DIR=ESTATE_FILE (the estate.yaml "
            "the records were made under; default UPSTREAM_ESTATE).",
        ),
    ],
    ridge: Annotated[float, typer.Option(help="The ridge penalty on the weights.")] = 1.0,
    held_out: Annotated[
        list[str] | None,
        typer.Option(
            "--held-out",
            help="A folder of records the fit must not see, DIR or DIR=ESTATE_FILE (repeat): "
            "the prior and the fitted weights are compared on them.",
        ),
    ] = None,
) -> None:
    """Fit the critic's confidence weights to how often its top hypothesis was right.

    Replays every record in the folders, fits a logistic regression of right-or-wrong on the
    evidence components, and prints the weights (for reliability.evidence.WEIGHTS) and the
    reliability table on the fitted data. Check them on seeds the fit did not see with
    `upstream eval --random N --seed S --replay`."""
    from upstream_dagster.evaluation.calibrate import Sample, check, fit, report, samples
    from upstream_dagster.spec import load_estate

    settings = settings_mod.load()

    def read(items: list[str]) -> list[Sample]:
        data = []
        for item in items:
            folder, _, estate = item.partition("=")
            if not Path(folder).is_dir():
                raise UpstreamError(
                    f"no folder of records at {folder}",
                    "record it first: `upstream eval --random 20 --seed S --records DIR`",
                )
            spec = load_estate(Path(estate) if estate else settings.estate_file)
            data += samples(Path(folder).glob("*.json"), spec)
        return data

    def run() -> list[str]:
        data = read(suite_dirs)
        out.print(f"{len(data)} hypotheses fitted on, {sum(s.right for s in data)} right")
        weights = fit(data, ridge)
        lines = [*report(data, weights), "", f"WEIGHTS = {weights}"]
        if held_out:
            unseen = read(held_out)
            lines += ["", f"held out ({len(unseen)} hypotheses the fit never saw):"]
            lines += check(unseen, weights)
        return lines

    plain("\n".join(guarded(run)))


@app.command("eval-summary")
def eval_summary(
    readme: Annotated[
        bool, typer.Option("--readme", help="Write the table into docs/evaluation.md as well.")
    ] = False,
) -> None:
    """Every committed suite replayed (shipped cases, each random seed on each estate): one row
    per suite, one for all of them, and the reliability table. No DataHub, no warehouse."""
    from upstream_dagster.evaluation.suite import write_grid
    from upstream_dagster.evaluation.summary import suites, table

    settings = settings_mod.load()
    with out.status("replaying every committed suite..."):
        lines = guarded(lambda: table(suites(settings.project_root)))
    plain("\n".join(lines))
    if readme:
        write_grid(settings.project_root / "docs" / "evaluation.md", "summary", lines)
