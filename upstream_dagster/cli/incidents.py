"""Commands of the reliability controller: investigate what fails, approve an incident's fix."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

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
    running,
    table,
)
from upstream_dagster.cli.approving import TOKEN_ENV, prepare
from upstream_dagster.errors import UpstreamError

if TYPE_CHECKING:
    from upstream_dagster import datahub, gate, runs
    from upstream_dagster.defs import incident_list, instance, journal
    from upstream_dagster.state import approvals, keys
else:  # imported when a command first uses them
    datahub = lazy("upstream_dagster.datahub")
    runs = lazy("upstream_dagster.runs")
    gate = lazy("upstream_dagster.gate")
    approvals = lazy("upstream_dagster.state.approvals")
    keys = lazy("upstream_dagster.state.keys")
    instance = lazy("upstream_dagster.defs.instance")
    journal = lazy("upstream_dagster.defs.journal")
    incident_list = lazy("upstream_dagster.defs.incident_list")


def short_id(key: str) -> str:
    """An incident's short id (`datahub.incident_keys.short_id`, imported when first needed)."""
    from upstream_dagster.datahub.incident_keys import short_id as of

    return of(key)


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
        from upstream_dagster.datahub.incidents import failing_now, named

        with datahub.connected(datahub.Target.of(settings)) as graph:
            return list(named(graph, failing_now(graph, urn)))

    keys = guarded(failing)
    if not keys:
        out.print("No assertion is failing in DataHub" + (f" for {urn}" if urn else "") + ".")
        return
    for key in keys:
        with running(f"investigating {short_id(key)} ({key})"):
            done = guarded(lambda key=key: runs.investigate(settings, key))  # type: ignore[misc]
        v = done.verdict
        out.print(f"[bold]{key}[/]", highlight=False)
        plain(f"  id {short_id(key)} (`upstream show {short_id(key)}`)")
        plain(f"  {v.headline()}")
        out.print(
            f"  confidence {v.confidence:.2f}, risk {v.risk.score:.2f}, "
            f"{v.reads} DataHub reads, remedy {v.remedy.action}",
            highlight=False,
        )
        summary = journal.verdict(instance.dagster_instance(settings), key)
        if summary is not None:
            print_rca(summary)


def print_rca(summary: journal.VerdictSummary) -> None:
    """The root-cause analysis as the incident in DataHub holds it: cause, confidence and its
    arithmetic, the evidence, the patch, and what approving will do. On a terminal the prose is
    rendered; the patch is never wrapped into another shape or cut, and into a pipe or a file
    every line goes as it is."""
    text = summary.rca or "(no analysis recorded)"
    if not out.is_terminal:
        plain(text)
    else:
        from rich.markdown import Markdown  # markdown-it, only for a terminal

        for part, code in blocks(text):
            if code:
                print_diff(part)
            elif part.strip():
                out.print(Markdown(part))
    out.print("")
    if summary.actionable:
        plain(
            f"Approving applies the {summary.remedy}, rebuilds the estate and resolves the "
            "incident only if the failing check then passes; every write can be undone with "
            "`upstream reset`."
        )
        plain(f"approve: upstream approve --incident {short_id(summary.key)} --reviewer NAME")
    else:
        plain(
            "Nothing to approve: " + ("no patch applies" if summary.concluded else "it abstained")
        )


def blocks(markdown: str) -> list[tuple[str, bool]]:
    """``markdown`` as (text, is a fenced code block) pieces, in order."""
    out: list[tuple[str, bool]] = []
    current: list[str] = []
    code = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            out.append(("\n".join(current), code))
            current, code = [], not code
            continue
        current.append(line)
    out.append(("\n".join(current), code))
    return [(text, is_code) for text, is_code in out if text or is_code]


def patch_of(summary: journal.VerdictSummary) -> str:
    """The patch a reviewer approves, as the analysis shows it ("" when there is none)."""
    return "\n".join(text for text, code in blocks(summary.rca) if code)


def print_diff(diff: str) -> None:
    """A unified diff, each line whole: added lines green, removed red on a terminal."""
    for line in diff.splitlines():
        style = "green" if line.startswith("+") else "red" if line.startswith("-") else None
        if style and not line.startswith(("+++", "---")) and out.is_terminal:
            out.print(Text(line, style=style))
        else:
            plain(line)


def resolved(settings: settings_mod.Settings, given: str) -> str:
    """The incident key a person named: a key, a short id, or `latest`."""
    read = instance.journal(settings)
    return guarded(lambda: incident_list.resolve(read, given))


@app.command()
def show(
    key: Annotated[
        str,
        typer.Argument(help="An incident's id (`upstream incidents`), its whole key, or latest."),
    ],
) -> None:
    """Print an incident's root-cause analysis: cause, confidence, evidence, patch, approval."""
    settings = settings_mod.load()
    key = resolved(settings, key)
    summary = journal.verdict(instance.journal(settings), key)
    if summary is None:
        fail(UpstreamError(f"no investigation of {key!r}", "run `upstream investigate`"))
    plain(f"{short_id(summary.key)}  {summary.key}")
    plain(f"{summary.conclusion}")
    print_rca(summary)


@app.command("incidents")
def list_incidents() -> None:
    """Every investigated incident: id, dataset, check, status, age, confidence and owner."""
    settings = settings_mod.load()
    read = instance.journal(settings)
    found = guarded(lambda: incident_list.rows(read, instance.read_gate_store(settings, read)))
    if not found:
        out.print("No incident has been investigated: `upstream investigate` looks for them.")
        return
    now = clock.now_ms()
    header = ("id", "dataset", "check", "status", "age", "confidence", "owner")
    rows = [
        (r.id, r.dataset, r.check, r.status, r.age(now), f"{r.confidence:.2f}", r.owner)
        for r in found
    ]
    for line in table(header, rows, right=frozenset({5})):
        plain(line)
    plain("details: upstream show ID (or latest); approve: upstream approve --incident ID")


def approve_incident(
    settings: settings_mod.Settings,
    key: str,
    reviewer: str,
    yes: bool,
    signing: Path | None,
    token_env: str = TOKEN_ENV,
) -> None:
    key = resolved(settings, key)
    summary = journal.verdict(instance.dagster_instance(settings), key)
    if summary is None:
        fail(UpstreamError(f"no verdict for incident {key}", "run `upstream investigate` first"))
    policies = estate_spec(settings).policies
    shown = gate.Subject("fix", summary.digest, summary.digest, (("fix", 0.0),))
    ready = prepare(settings, policies, shown, summary.digest, reviewer, signing, token_env)
    plain(f"{short_id(key)}  {key}")
    plain(summary.conclusion)
    patch = patch_of(summary)
    if patch:
        plain(f"The {summary.remedy} you approve:")
        print_diff(patch)
    if not yes and not typer.confirm(f"Apply the {summary.remedy} as {reviewer}?"):
        raise typer.Exit(1)
    with running(f"applying the fix for incident {short_id(key)} (fix, rebuild, re-check)"):
        done = guarded(
            lambda: runs.approve_incident(
                settings, key, summary.digest, reviewer, ready.proof, ready.nonce, ready.token
            )
        )
    if done.result:
        out.print(done.result)
        return
    plain(
        f"{'resolved' if done.resolved else 'still open'}: {done.check_after_fix}"
        f"; {done.applied}; {done.writes} writes to DataHub"
    )
    if not done.resolved:
        raise typer.Exit(2)


@app.command()
def keygen(
    name: Annotated[str, typer.Argument(help="The approver's name, as estate.yaml lists it.")],
    out_path: Annotated[
        Path | None, typer.Option("--out", help="Where to keep the private key.")
    ] = None,
) -> None:
    """Make an approver's signing key; print the line estate.yaml lists it by."""
    path = out_path or keys.default_key(name)
    public = guarded(lambda: keys.generate(path))
    out.print(f"private key: {path} (only you can read it; keep it out of the repository)")
    out.print("add to estate.yaml, under policies:")
    plain(f"  approver_keys:\n    {name}: {public}")


@app.command()
def sign(
    digest: Annotated[str, typer.Option(help="The batch digest, or the verdict digest.")],
    reviewer: Annotated[str, typer.Option(help="Your name in policies.approvers.")],
    kind: Annotated[str, typer.Option(help="batch (coverage) or fix (an incident).")] = "batch",
    key: Annotated[Path | None, typer.Option(help="Your signing key.")] = None,
    nonce: Annotated[
        str | None,
        typer.Option(help="The one-time value shown beside the digest (default: read it)."),
    ] = None,
) -> None:
    """Print your signature over an approval, for the launchpad's `proof` field: it covers
    the digest, the policy in estate.yaml and the one-time value, so it is good for one write."""
    if kind not in ("batch", "fix"):
        fail(UpstreamError(f"unknown kind {kind!r}", "pass --kind batch or --kind fix"))
    settings = settings_mod.load()
    policies = estate_spec(settings).policies
    if nonce is None:
        store = guarded(lambda: instance.gate_store(settings))
        held = guarded(lambda: approvals.outstanding(store, kind, digest))
        if held is None:
            fail(UpstreamError(
                f"{kind} {digest} has no approval waiting (written, or its one-time value spent)",
                "record it again for a new value (`upstream plan --record` for a batch), or "
                "pass --nonce with the value shown beside it",
            ))  # fmt: skip
        nonce = held.nonce
    policy = gate.policy_digest(policies)
    path = key or keys.default_key(reviewer)
    err.print(f"signed for one-time value {nonce}", highlight=False)
    plain(guarded(lambda: keys.sign(path, kind, digest, reviewer, policy, nonce or "")))


@app.command("mcp")
def mcp_server() -> None:
    """Serve the read-only MCP tools (dial, violations, queue, incidents) over stdio."""
    from upstream_dagster.cli.assistant import server  # the MCP SDK loads only for this

    server(settings_mod.load()).run("stdio")
