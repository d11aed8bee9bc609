"""The `upstream` command line's app and the helpers every command shares."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import NoReturn, TypeVar

import typer
from rich.console import Console

from upstream_dagster import settings as settings_mod
from upstream_dagster.clock import CLOCK_ENV, ClockError
from upstream_dagster.datahub import Target, connected
from upstream_dagster.datahub.summary import summarize
from upstream_dagster.errors import UpstreamError

app = typer.Typer(
    help="Upstream: desired-state control plane for DataHub.",
    no_args_is_help=True,
    add_completion=False,
)
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)
T = TypeVar("T")


def lazy(name: str) -> ModuleType:
    """Module ``name``, executed on first use: a command that never launches a Dagster run (a
    score read, a summary, --help) never pays for importing Dagster and the definitions."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(name)
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@contextmanager
def running(what: str) -> Iterator[None]:
    """A spinner (on stderr, so a command's printed result stays clean) saying what runs and,
    while a Dagster run is under way, the step it is in."""
    from upstream_dagster.defs.progress import steps  # Dagster: only a command that runs one

    with err.status(f"{what}...") as status:

        def step(key: str) -> None:
            status.update(f"{what}: step {key}...")

        with steps(step):
            yield


def fail(exc: UpstreamError) -> NoReturn:
    err.print(f"[bold red]error:[/] {exc.problem}\n  [bold]fix:[/] {exc.fix}")
    raise typer.Exit(1)


def guarded(step: Callable[[], T]) -> T:
    """``step()``; an `UpstreamError` prints its cause and fix and exits 1."""
    try:
        return step()
    except UpstreamError as exc:
        fail(exc)
    except ClockError as exc:
        fail(UpstreamError(str(exc), f"unset {CLOCK_ENV} or give it an ISO-8601 instant"))


def plain(text: str) -> None:
    """Print text as it is: no markup, no highlighting."""
    out.print(text, markup=False, highlight=False)


def print_summary(settings: settings_mod.Settings) -> None:
    target = Target.of(settings)
    with connected(target) as graph:
        summary = summarize(graph)
    out.print(f"[bold]DataHub ({target.backend}: {target.where}) now holds:[/]")
    for line in summary.lines():
        out.print("  " + line)
