"""Commands about the estate: build the demo, score it, say what DataHub holds, load a
datapack, exercise DataHub, open the UI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from upstream_dagster import clock
from upstream_dagster import settings as settings_mod
from upstream_dagster.cli.app import (
    app,
    err,
    estate_spec,
    fail,
    guarded,
    lazy,
    out,
    plain,
    print_summary,
    running,
)
from upstream_dagster.errors import UpstreamError

if TYPE_CHECKING:
    from upstream_dagster import datahub, runs
    from upstream_dagster.conformance import detection
    from upstream_dagster.conformance import score as dials
    from upstream_dagster.conformance.score import Dial
    from upstream_dagster.datahub import ingest
    from upstream_dagster.datahub import spike as spike_surfaces
    from upstream_dagster.defs import instance
    from upstream_dagster.services import scoring
    from upstream_dagster.warehouse import dbt_project
else:  # imported when a command first uses them
    datahub = lazy("upstream_dagster.datahub")
    dials = lazy("upstream_dagster.conformance.score")
    detection = lazy("upstream_dagster.conformance.detection")
    runs = lazy("upstream_dagster.runs")
    instance = lazy("upstream_dagster.defs.instance")
    ingest = lazy("upstream_dagster.datahub.ingest")
    scoring = lazy("upstream_dagster.services.scoring")
    dbt_project = lazy("upstream_dagster.warehouse.dbt_project")
    spike_surfaces = lazy("upstream_dagster.datahub.spike")


@app.command()
def demo() -> None:
    """Build the demo estate, ingest it into DataHub, measure fault detection where a tier asks
    for it (bounded by policies.detection.max_seconds), print what DataHub holds and the dial."""
    _build_and_score(settings_mod.load(), detect=True)


@app.command("build")
def build_estate() -> None:
    """Build your own estate: the dbt-duckdb project UPSTREAM_DBT_SOURCE names, unmodified
    (Upstream supplies the profile that points it at its warehouse; seeds included), tested,
    profiled, ingested into DataHub, and scored against UPSTREAM_ESTATE."""
    settings = settings_mod.load()
    out.print(f"dbt project: {settings.dbt_source_dir}\nestate file: {settings.estate_file}")
    _build_and_score(settings)


def _build_and_score(settings: settings_mod.Settings, detect: bool = False) -> None:
    out.print(f"state folder: {settings.state_dir}")
    spec = estate_spec(settings)  # a bad file fails here, file:line, fix
    detect = detect and any(t.requirements.min_fault_detection for t in spec.tiers)

    def build() -> runs.Scored:
        project = dbt_project.DbtProject.of(settings)
        project.deploy()
        project.parse()
        for line in dbt_project.unread_test_keys(
            project.manifest()
        ):  # dbt itself says nothing of these
            err.print(f"[yellow]warning:[/] {line}")
        with running("building the estate (raw feeds -> dbt build -> DataHub)"):
            runs.run_job(settings, "estate_build")
        print_summary(settings)
        if detect:  # before the score job, which reads the measurement
            _detect(settings)
        with running(f"scoring {settings.estate_file.name} against DataHub"):
            return runs.score(settings)

    scored = guarded(build)
    out.print(f"\n[bold]{settings.estate_file.name} scored against DataHub:[/]")
    out.print(dials.render(scored.dial), end="", markup=False, highlight=False)
    out.print("\nNext: `make ui` to browse the assets, or `.venv/bin/upstream score`.")


EstateOption = Annotated[
    Path | None, typer.Option("--estate", help="The estate file to score (default: estate.yaml).")
]


@app.command()
def score(
    estate: EstateOption = None,
    record: Annotated[
        bool,
        typer.Option(
            "--record",
            help="Run the score job instead: a point on the dial's history in Dagster and a "
            "new plan (what the nightly schedule does).",
        ),
    ] = False,
) -> None:
    """Score estate.yaml against DataHub and print the dial (per tier, per requirement)."""
    if estate is not None:
        os.environ["UPSTREAM_ESTATE"] = str(estate.resolve())
    settings = settings_mod.load()
    spec = estate_spec(settings)  # a bad file: file:line, fix
    if record:
        with running("scoring (the score job)"):
            dial = guarded(lambda: runs.score(settings)).dial
    else:  # a read: the same service the conformance asset calls, without launching a run

        def read() -> Dial:
            with datahub.connected(datahub.Target.of(settings)) as graph:
                found = detection.load(settings.state_dir)  # the last `upstream detect`
                return scoring.read_and_score(graph, spec, clock.now_ms(), found)

        dial = guarded(read)
    out.print(dials.render(dial), end="", markup=False, highlight=False)
    if not dial.overall.checks:  # a yardstick that measures nothing is a broken estate file
        raise typer.Exit(1)


@app.command()
def detect(estate: EstateOption = None) -> None:
    """Measure fault detection for the tiers that set min_fault_detection: seeded faults
    (policies.detection: seed, faults_per_tier, max_seconds) tried one at a time on a sandbox
    copy of the warehouse, never the team's; prints which check caught each and which none
    did, and keeps the result for the dial (`upstream score`)."""
    if estate is not None:
        os.environ["UPSTREAM_ESTATE"] = str(estate.resolve())
    settings = settings_mod.load()
    spec = estate_spec(settings)  # a bad file: file:line, fix
    found = guarded(lambda: _detect(settings))

    def read() -> Dial:  # as the dial reads it: an assertion written since counts
        with datahub.connected(datahub.Target.of(settings)) as graph:
            return scoring.read_and_score(graph, spec, clock.now_ms(), found)

    plain(detection.report(found, guarded(read).results))


def _detect(settings: settings_mod.Settings) -> detection.Detection:
    # the sandbox, dbt and the draw are imported here only: the command line starts light
    from upstream_dagster.evaluation.detect import run_detection

    def say(line: str) -> None:
        err.print(f"detect: {line}", markup=False, highlight=False)

    return run_detection(settings, say)


@app.command()
def summary() -> None:
    """Print how many datasets, lineage edges, assertions and owners DataHub holds."""
    guarded(lambda: print_summary(settings_mod.load()))


RECORD_HELP = (
    "Keep every exchange with your DataHub server in this file (no token, no host), for the "
    "project's tests to replay: see docs/datahub.md"
)


@app.command()
def spike(
    record: Annotated[Path | None, typer.Option("--record", help=RECORD_HELP)] = None,
) -> None:
    """Exercise every DataHub surface Upstream uses against the configured DataHub (a GMS when
    DATAHUB_GMS_URL is set): PASS only for what read back. Writes go to one scratch dataset."""
    settings = settings_mod.load()
    target = datahub.Target.of(settings)
    try:
        if record is not None:
            from upstream_dagster.datahub.spike_record import recorded_spike

            server, surfaces = recorded_spike(target, record)
        else:
            with datahub.connected(target) as graph:
                server = graph.server
                surfaces = spike_surfaces.spike(graph)
    except UpstreamError as exc:
        fail(exc)
    hint = "" if target.gms_url else " (set DATAHUB_GMS_URL for a server)"
    table = Table(title=f"{server}{hint}")
    for column in ("surface", "sends", "result", "detail"):
        table.add_column(column)
    colour = {"PASS": "green", "PARTIAL": "yellow", "FAIL": "red"}
    for s in surfaces:
        table.add_row(s.name, s.operation, f"[{colour[s.result]}]{s.result}[/]", s.detail)
    out.print(table)
    passed = sum(s.result == spike_surfaces.PASS for s in surfaces)
    out.print(f"{passed}/{len(surfaces)} surfaces PASS")
    if record is not None:
        out.print(f"every exchange recorded in {record}: see docs/datahub.md for where to send it")
    if passed != len(surfaces):
        raise typer.Exit(1)


DATAPACK_HELP = "A datapack folder of MCP *.json files, e.g. tests/estates/showcase-ecommerce"


@app.command("load-estate")
def load_datapack(path: Annotated[Path, typer.Argument(help=DATAPACK_HELP)]) -> None:
    """Load a datapack into DataHub through DataHub's file source; report what landed."""
    settings = settings_mod.load()
    if not path.exists():
        fail(UpstreamError(f"{path} does not exist", "pass the path of a datapack folder"))
    target = datahub.Target.of(settings)

    def load() -> ingest.IngestReport:
        with datahub.connected(target, create=True):
            pass
        return ingest.ingest_file(target, path)

    report = guarded(load)
    out.print(report.summary())
    if report.dropped:
        out.print(
            f"  the sink dropped {report.dropped} records it cannot store "
            "(DataHub Lite keeps no Cloud-only aspects); first warning:"
        )
        plain(f"  {report.warnings[0][:200] if report.warnings else ''}")
    print_summary(settings)


@app.command()
def ui(port: Annotated[int, typer.Option(help="Port for the Dagster UI.")] = 3000) -> None:
    """Start the Dagster UI (webserver and daemon) on this code location."""
    settings = settings_mod.load()
    instance.run_instance(settings)
    cmd = [
        str(Path(sys.executable).with_name("dagster")),
        "dev",
        "-w",
        str(settings.project_root / "workspace.yaml"),
        "-p",
        str(port),
    ]
    raise typer.Exit(subprocess.call(cmd, cwd=settings.project_root))
