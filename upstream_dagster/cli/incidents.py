"""Commands of the reliability controller: investigate what fails, approve an incident's fix."""

from __future__ import annotations

from typing import Annotated

import typer

from upstream_dagster import runs
from upstream_dagster import settings as settings_mod
from upstream_dagster.cli.app import app, fail, guarded, out, plain
from upstream_dagster.datahub import Target, connected
from upstream_dagster.datahub.incidents import failing_now, incident_key
from upstream_dagster.defs import journal
from upstream_dagster.errors import UpstreamError


@app.command()
def investigate(
    urn: Annotated[
        str | None,
        typer.Argument(help="An assertion or dataset URN; default: every failing assertion."),
    ] = None,
) -> None:
    """Investigate failing assertions now (what the sensor does), and print each conclusion."""
    settings = settings_mod.load()

    def failing() -> list[str]:
        with connected(Target.of(settings)) as graph:
            return [incident_key(r) for r in failing_now(graph, urn)]

    keys = guarded(failing)
    if not keys:
        out.print("No assertion is failing in DataHub" + (f" for {urn}" if urn else "") + ".")
        return
    for key in keys:
        with out.status(f"investigating {key}..."):
            done = guarded(lambda key=key: runs.investigate(settings, key))  # type: ignore[misc]
        v = done.verdict
        out.print(f"[bold]{key}[/]", highlight=False)
        plain(f"  {v.headline()}")
        out.print(
            f"  confidence {v.confidence:.2f}, risk {v.risk.score:.2f}, "
            f"{v.reads} DataHub reads, remedy {v.remedy.action}",
            highlight=False,
        )
        if v.concluded and v.remedy.action not in ("none", "escalate"):
            plain(f"  approve: upstream approve --incident {key} --reviewer NAME")


def approve_incident(settings: settings_mod.Settings, key: str, reviewer: str, yes: bool) -> None:
    summary = journal.verdict(runs.dagster_instance(settings), key)
    if summary is None:
        fail(UpstreamError(f"no verdict for incident {key}", "run `upstream investigate` first"))
    plain(f"{key}: {summary.conclusion}")
    if not yes and not typer.confirm(f"Apply the {summary.remedy} as {reviewer}?"):
        raise typer.Exit(1)
    done = guarded(lambda: runs.approve_incident(settings, key, summary.digest, reviewer))
    if done.result:
        out.print(done.result)
        return
    plain(
        f"{'resolved' if done.resolved else 'still open'}: {done.check_after_fix}"
        f"; {done.applied}; {done.writes} writes to DataHub"
    )
    if not done.resolved:
        raise typer.Exit(2)
