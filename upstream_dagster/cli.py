"""`upstream`: the command line. It drives the same Dagster definitions the UI shows."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from upstream_dagster import settings as settings_mod
from upstream_dagster.errors import UpstreamError

# sqlglotrs arrives with a dependency and warns on import; nothing a user can act on.
warnings.filterwarnings("ignore", message=r"sqlglot\[rs\] is deprecated")

app = typer.Typer(
    help="Upstream: desired-state control plane for DataHub.",
    no_args_is_help=True,
    add_completion=False,
)
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


def _fail(exc: UpstreamError) -> None:
    err.print(f"[bold red]error:[/] {exc.problem}\n  [bold]fix:[/] {exc.fix}")
    raise typer.Exit(1)


def _print_summary(settings: settings_mod.Settings) -> None:
    from upstream_dagster.datahub import open_graph
    from upstream_dagster.datahub.summary import summarize

    graph = open_graph(settings)
    try:
        summary = summarize(graph)
    finally:
        graph.close()
    where = settings.gms_url or str(settings.lite_file)
    out.print(f"[bold]DataHub ({settings.backend}: {where}) now holds:[/]")
    for line in summary.lines():
        out.print("  " + line)


def run_job(
    settings: settings_mod.Settings,
    job_name: str,
    run_config: dict[str, Any] | None = None,
    tags: dict[str, str] | None = None,
    selection: list[Any] | None = None,
    partition: str | None = None,
) -> Any:
    from upstream_dagster.definitions import build
    from upstream_dagster.runtime import dagster_instance, failure_message

    instance = dagster_instance(settings)
    job = build(settings).resolve_job_def(job_name)
    # The CLI shows warnings only; the full log is in the Dagster UI for every run.
    config = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}, **(run_config or {})}
    # dagster-dbt echoes every dbt log line to stdout; a command prints its own summary, and
    # the full log stays in the run's event log (the Dagster UI).
    with contextlib.redirect_stdout(io.StringIO()):
        result = job.execute_in_process(
            instance=instance,
            raise_on_error=False,
            run_config=config,
            tags=tags,
            asset_selection=selection,
            partition_key=partition,
        )
    if not result.success:
        raise UpstreamError(
            f"the Dagster job {job_name} failed ({failure_message(result)})",
            "read the message above; the run's full log is in the Dagster UI "
            f"(`make ui`), run id {result.run_id}",
        )
    return result


def _run(
    settings: settings_mod.Settings,
    job_name: str,
    run_config: dict[str, Any] | None = None,
    tags: dict[str, str] | None = None,
    partition: str | None = None,
) -> Any:
    """run_job for commands: a failure prints its cause and fix and exits 1."""
    try:
        return run_job(settings, job_name, run_config, tags, partition=partition)
    except UpstreamError as exc:
        _fail(exc)


@app.command()
def demo() -> None:
    """Build the demo estate, ingest it into DataHub, print what DataHub holds and the dial."""
    from upstream_dagster.conformance.score import render
    from upstream_dagster.demo.deploy import deploy_project, prepare_manifest

    settings = settings_mod.load()
    try:
        out.print(f"state folder: {settings.state_dir}")
        deploy_project(settings)
        prepare_manifest(settings)
        with out.status("running the estate_build job (raw feeds -> dbt build -> DataHub)..."):
            run_job(settings, "estate_build")
        _print_summary(settings)
        with out.status(f"scoring {settings.estate_file.name} against DataHub..."):
            result = run_job(settings, "score")
    except UpstreamError as exc:
        _fail(exc)
    out.print(f"\n[bold]{settings.estate_file.name} scored against DataHub:[/]")
    out.print(render(result.output_for_node("conformance")), end="", markup=False, highlight=False)
    out.print("\nNext: `make ui` to browse the assets, or `.venv/bin/upstream score`.")


EstateOption = Annotated[
    Path | None, typer.Option("--estate", help="The estate file to score (default: estate.yaml).")
]


@app.command()
def score(estate: EstateOption = None) -> None:
    """Score estate.yaml against DataHub and print the dial (per tier, per requirement)."""
    import os

    from upstream_dagster.conformance.score import render
    from upstream_dagster.spec import load_estate

    if estate is not None:
        os.environ["UPSTREAM_ESTATE"] = str(estate.resolve())
    settings = settings_mod.load()
    try:
        load_estate(settings.estate_file)  # a bad file fails here, with file:line and fix
        result = run_job(settings, "score")
    except UpstreamError as exc:
        _fail(exc)
    dial = result.output_for_node("conformance")
    out.print(render(dial), end="", markup=False, highlight=False)
    if not dial.overall.checks:  # a yardstick that measures nothing is a broken estate file
        raise typer.Exit(1)


def _latest_metadata(settings: settings_mod.Settings, key: str) -> dict[str, Any]:
    import dagster as dg

    from upstream_dagster.runtime import dagster_instance

    event = dagster_instance(settings).get_latest_materialization_event(dg.AssetKey(key))
    if event is None or event.asset_materialization is None:
        return {}
    return {k: v.value for k, v in event.asset_materialization.metadata.items()}


@app.command()
def plan() -> None:
    """Score the estate and print the priced proposals of the current batch, with its digest."""
    settings = settings_mod.load()
    result = _run(settings, "score")
    batch = result.output_for_node("proposals")
    before, after = batch.base.overall.percent, batch.projected.overall.percent
    out.print(
        f"batch {batch.digest}: {len(batch.proposals)} proposals, conformance "
        f"{before:.1f}% -> {after:.1f}% projected ({after - before:+.1f} points)"
    )
    for p in batch.proposals:
        price = p.price
        value = batch.display(p.change.values[0]) if p.change.values else ""
        out.print(
            f"  {p.id}  {p.requirement:<22} {p.asset.split(',')[1] if ',' in p.asset else p.asset}"
            f"  {p.change.kind} {value[:60]}  "
            f"{f'+{price.delta_points:.2f} pts' if price else 'not priced'}  "
            f"[{'; '.join(p.evidence)}]",
            markup=False,
            highlight=False,
        )
    out.print(
        f"{len(batch.unfixable)} violations stay (nothing in the graph to infer from); "
        f"{batch.dropped} proposals dropped for no simulated benefit; {batch.deferred} priced "
        "proposals wait for the next batch (max_proposals_per_run)."
    )
    out.print(f"approve: upstream approve --all --reviewer NAME   (digest {batch.digest})")


@app.command()
def queue() -> None:
    """Print everything waiting on a person (one queue for every controller)."""
    from upstream_dagster.defs.reliability import waiting_incidents
    from upstream_dagster.runtime import dagster_instance

    settings = settings_mod.load()
    meta = _latest_metadata(settings, "approval_queue")
    incidents = waiting_incidents(dagster_instance(settings), settings)
    if meta:
        text = str(meta["queue"])
        coverage = [line for line in text.splitlines() if line.startswith("- coverage")]
        for line in coverage:
            out.print(line, markup=False, highlight=False)
    else:
        out.print("No coverage batch planned yet: run `upstream plan` (or the score job).")
    for line in incidents:
        out.print(f"- {line}", markup=False, highlight=False)
    if not incidents:
        out.print("No incident fix is waiting for approval.")


@app.command("break")
def break_(
    scenario: Annotated[
        Path, typer.Argument(help="A scenario file, e.g. scenarios/vendor_drift.yaml")
    ],
) -> None:
    """Apply a scenario's faults to the warehouse, rebuild, and re-ingest into DataHub."""
    from upstream_dagster.reliability.scenario import load_scenario
    from upstream_dagster.scenarios import break_estate

    settings = settings_mod.load()
    try:
        sc = load_scenario(scenario)
        with out.status(f"breaking the estate with {sc.name} (faults, dbt build, DataHub)..."):
            report = break_estate(settings, sc)
    except UpstreamError as exc:
        _fail(exc)
    out.print(f"[bold]{sc.name}[/] applied:")
    for sql in report.statements:
        out.print(f"  {sql}", markup=False, highlight=False)
    for table in report.skipped:
        out.print(f"  {table} was not rebuilt")
    for urn in report.flaky:
        out.print(f"  {urn} reported a failure with no change in the data")
    out.print(
        "Every job stayed green. The failing_assertions sensor picks up what failed in DataHub; "
        "or run `upstream investigate` now."
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
    from upstream_dagster.scenarios import heal_estate

    settings = settings_mod.load()
    try:
        with out.status("rebuilding the clean estate (estate_build)..."):
            removed = heal_estate(settings, forget)
    except UpstreamError as exc:
        _fail(exc)
    out.print(
        "healed: clean warehouse and metadata rebuilt"
        + (f"; {removed} memory properties removed" if forget else "; memory kept")
    )


@app.command()
def investigate(
    urn: Annotated[
        str | None,
        typer.Argument(help="An assertion or dataset URN; default: every failing assertion."),
    ] = None,
) -> None:
    """Investigate failing assertions now (what the sensor does), and print each conclusion."""
    from upstream_dagster.datahub import open_graph
    from upstream_dagster.datahub.incidents import failing_now, incident_key
    from upstream_dagster.runtime import dagster_instance

    settings = settings_mod.load()
    graph = open_graph(settings)
    try:
        failing = failing_now(graph, urn)
    finally:
        graph.close()
    if not failing:
        out.print("No assertion is failing in DataHub" + (f" for {urn}" if urn else "") + ".")
        return
    instance = dagster_instance(settings)
    for run in failing:
        key = incident_key(run)
        instance.add_dynamic_partitions("incidents", [key])
        with out.status(f"investigating {key}..."):
            result = _run(settings, "reliability", partition=key)
        meta = result.asset_materializations_for_node("incident_verdict")[0].metadata
        out.print(f"[bold]{key}[/]", highlight=False)
        out.print(f"  {meta['conclusion'].value}", markup=False, highlight=False)
        out.print(
            f"  confidence {meta['confidence'].value:.2f}, risk {meta['risk'].value:.2f}, "
            f"{meta['datahub_reads'].value} DataHub reads, remedy {meta['remedy'].value}",
            highlight=False,
        )
        if meta["concluded"].value and meta["remedy"].value not in ("none", "escalate"):
            out.print(
                f"  approve: upstream approve --incident {key} --reviewer NAME",
                markup=False,
                highlight=False,
            )


@app.command()
def approve(
    reviewer: Annotated[str, typer.Option(help="Your name; must be an approver in estate.yaml.")],
    ids: Annotated[list[str] | None, typer.Option("--ids", help="Proposal ids to write.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Approve the whole batch.")] = False,
    reject: Annotated[list[str] | None, typer.Option(help="Proposal ids to reject.")] = None,
    reason: Annotated[str, typer.Option(help="Why the rejected ids were rejected.")] = "",
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
    incident: Annotated[
        str | None, typer.Option(help="Approve an incident's fix instead of a coverage batch.")
    ] = None,
) -> None:
    """Launch the write-back job for the current batch, or for one incident's fix."""
    settings = settings_mod.load()
    if incident:
        _approve_incident(settings, incident, reviewer, yes)
        return
    if not all_ and not ids:
        _fail(UpstreamError("nothing to approve", "pass --all or --ids ID [--ids ID ...]"))
    digest = _latest_metadata(settings, "proposals").get("batch_digest")
    if not digest:
        _fail(UpstreamError("no batch has been planned", "run `upstream plan` first"))
    if not yes and not typer.confirm(f"Write batch {digest} to DataHub as {reviewer}?"):
        raise typer.Exit(1)
    config = {
        "batch_digest": digest,
        "approve": ["all"] if all_ else list(ids or []),
        "reviewer": reviewer,
        "reject": list(reject or []),
        "reject_reason": reason,
    }
    result = _run(
        settings, "coverage_writeback_job", {"ops": {"coverage_writeback": {"config": config}}}
    )
    meta = result.asset_materializations_for_node("coverage_writeback")[0].metadata
    if "result" in meta:  # the policy wrote nothing, and says why
        out.print(f"batch {digest}: {meta['result'].value}")
        return
    out.print(
        f"batch {digest}: {meta['written'].value} writes, {meta['failed'].value} failed "
        f"(policy {meta['policy'].value}); projected {meta['projected_percent'].value}%"
    )
    if meta["failed"].value:
        err.print("some writes failed: the receipts are on the coverage_writeback materialization")
        raise typer.Exit(2)


def _approve_incident(settings: settings_mod.Settings, key: str, reviewer: str, yes: bool) -> None:
    import dagster as dg

    from upstream_dagster.runtime import dagster_instance

    instance = dagster_instance(settings)
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey("incident_verdict"), asset_partitions=[key]),
        limit=1,
    ).records
    if not records or records[0].asset_materialization is None:
        _fail(UpstreamError(f"no verdict for incident {key}", "run `upstream investigate` first"))
    meta = records[0].asset_materialization.metadata
    digest = str(meta["verdict_digest"].value)
    out.print(f"{key}: {meta['conclusion'].value}", markup=False, highlight=False)
    if not yes and not typer.confirm(f"Apply the {meta['remedy'].value} as {reviewer}?"):
        raise typer.Exit(1)
    config = {"verdict_digest": digest, "reviewer": reviewer}
    result = _run(
        settings,
        "incident_writeback_job",
        {"ops": {"incident_writeback": {"config": config}}},
        partition=key,
    )
    done = result.asset_materializations_for_node("incident_writeback")[0].metadata
    if "result" in done:
        out.print(str(done["result"].value))
        return
    out.print(
        f"{'resolved' if done['resolved'].value else 'still open'}: {done['check_after_fix'].value}"
        f"; {done['applied'].value}; {done['writes'].value} writes to DataHub",
        markup=False,
        highlight=False,
    )
    if not done["resolved"].value:
        raise typer.Exit(2)


@app.command()
def verify() -> None:
    """Re-read DataHub and check the measured conformance equals the approved projection."""
    settings = settings_mod.load()
    result = _run(settings, "coverage_verify_job")
    (check,) = result.get_asset_check_evaluations()
    meta = {k: v.value for k, v in check.metadata.items()}
    out.print(
        f"measured {meta['measured']}% vs projected {meta['projected']}%: "
        f"{'equal' if check.passed else 'DIFFERENT'}"
    )
    if not check.passed:
        raise typer.Exit(1)


@app.command()
def reset(
    yes: Annotated[bool, typer.Option("--yes", help="Confirm: this rewrites DataHub.")] = False,
    batch: Annotated[str, typer.Option(help="One batch digest, or all.")] = "all",
) -> None:
    """Undo write-backs: restore every aspect they wrote to its value before."""
    if not yes:
        _fail(UpstreamError("reset rewrites DataHub", "pass --yes to confirm"))
    settings = settings_mod.load()
    result = _run(
        settings,
        "coverage_reset_job",
        {"ops": {"coverage_reset": {"config": {"batch_digest": batch, "confirm": True}}}},
    )
    meta = result.asset_materializations_for_node("coverage_reset")[0].metadata
    out.print(
        f"restored {meta['aspects_restored'].value} aspects (batches {meta['batches'].value})"
    )


@app.command()
def summary() -> None:
    """Print how many datasets, lineage edges, assertions and owners DataHub holds."""
    try:
        _print_summary(settings_mod.load())
    except UpstreamError as exc:
        _fail(exc)


@app.command()
def spike() -> None:
    """Exercise every DataHub surface Upstream uses against the configured DataHub (a GMS when
    DATAHUB_GMS_URL is set): PASS only for what read back. Writes go to one scratch dataset."""
    from rich.table import Table

    from upstream_dagster.datahub import open_graph
    from upstream_dagster.datahub.spike import PASS
    from upstream_dagster.datahub.spike import spike as run_spike

    settings = settings_mod.load()
    try:
        graph = open_graph(settings)
    except UpstreamError as exc:
        _fail(exc)
    try:
        surfaces = run_spike(graph)
    finally:
        graph.close()
    where = settings.gms_url or f"{settings.lite_file} (set DATAHUB_GMS_URL for a server)"
    table = Table(title=f"DataHub {settings.backend}: {where}")
    for column in ("surface", "sends", "result", "detail"):
        table.add_column(column)
    colour = {"PASS": "green", "PARTIAL": "yellow", "FAIL": "red"}
    for s in surfaces:
        table.add_row(s.name, s.operation, f"[{colour[s.result]}]{s.result}[/]", s.detail)
    out.print(table)
    passed = sum(s.result == PASS for s in surfaces)
    out.print(f"{passed}/{len(surfaces)} surfaces PASS")
    if passed != len(surfaces):
        raise typer.Exit(1)


DATAPACK_HELP = "A datapack folder of MCP *.json files, e.g. ../shared/estates/showcase-ecommerce"


@app.command("load-estate")
def load_estate(path: Annotated[Path, typer.Argument(help=DATAPACK_HELP)]) -> None:
    """Load a datapack into DataHub through DataHub's file source; report what landed."""
    from upstream_dagster.datahub.ingest import ingest_file

    settings = settings_mod.load()
    if not path.exists():
        _fail(UpstreamError(f"{path} does not exist", "pass the path of a datapack folder"))
    try:
        from upstream_dagster.datahub import open_graph

        open_graph(settings, create=True).close()
        report = ingest_file(settings, path)
    except UpstreamError as exc:
        _fail(exc)
    out.print(report.summary())
    if report.dropped:
        out.print(
            f"  the sink dropped {report.dropped} records it cannot store "
            "(DataHub Lite keeps no Cloud-only aspects); first warning:"
        )
        out.print(f"  {report.warnings[0][:200] if report.warnings else ''}")
    _print_summary(settings)


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
        bool, typer.Option("--readme", help="Write the grid into README.md as well.")
    ] = False,
) -> None:
    """Grade the reliability controller on cases, live or replayed; exits 1 on a missed target.

    Live, each case runs on a fresh copy of the estate; --replay recomputes the verdicts from
    the recorded reads with no DataHub and no warehouse. Prints the grid."""
    from upstream_dagster import evalrun

    settings = settings_mod.load()
    try:
        missed = evalrun.main(
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
    except UpstreamError as exc:
        _fail(exc)
    raise typer.Exit(1 if missed else 0)


@app.command()
def ui(port: Annotated[int, typer.Option(help="Port for the Dagster UI.")] = 3000) -> None:
    """Start the Dagster UI (webserver and daemon) on this code location."""
    from upstream_dagster.runtime import dagster_instance

    settings = settings_mod.load()
    dagster_instance(settings)
    cmd = [
        str(Path(sys.executable).with_name("dagster")),
        "dev",
        "-w",
        str(settings.project_root / "workspace.yaml"),
        "-p",
        str(port),
    ]
    raise typer.Exit(subprocess.call(cmd, cwd=settings.project_root))


if __name__ == "__main__":
    app()
