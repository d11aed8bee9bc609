"""The `upstream` command line's app and the helpers every command shares."""

from __future__ import annotations

import errno
import importlib.util
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import NoReturn, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

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
    err.print(
        f"[bold red]error:[/] {escape(exc.problem)}\n  [bold]fix:[/] {escape(exc.fix)}",
        highlight=False,
    )
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


_FULL = ("database or disk is full", "disk i/o error", "no space left on device", "disk quota")
_CORRUPT = ("file is not a database", "database disk image is malformed")


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and every exception behind it (causes, contexts, and what Dagster wrapped)."""
    seen: list[BaseException] = []
    stack: list[BaseException | None] = [exc]
    while stack:
        found = stack.pop()
        if found is None or any(found is s for s in seen):
            continue
        seen.append(found)
        wrapped = getattr(found, "original_exc_info", None) or (None, None, None)
        stack += [found.__cause__, found.__context__, getattr(found, "user_exception", None)]
        stack.append(wrapped[1] if isinstance(wrapped[1], BaseException) else None)
    return seen


def machine_failure(exc: BaseException, state_dir: str) -> UpstreamError | None:
    """What the machine did (a full disk, a corrupt file), as one line with the fix; None when
    ``exc`` is something else (a bug, which keeps its traceback)."""
    for found in _chain(exc):
        if isinstance(found, UpstreamError):
            return found
        text = str(found).lower()
        if (isinstance(found, OSError) and found.errno in (errno.ENOSPC, errno.EDQUOT)) or any(
            t in text for t in _FULL
        ):
            return UpstreamError(
                f"the disk that holds the state folder {state_dir} is full (or failing): "
                f"{str(found).splitlines()[0]}",
                "free space there, then run the command again; a write-back it stopped is "
                "undone by `upstream reset --yes` (every pre-image was journaled before its "
                "write)",
            )
        if any(t in text for t in _CORRUPT):
            return UpstreamError(
                f"a database in the state folder {state_dir} is corrupt: "
                f"{str(found).splitlines()[0]}",
                "if the gate's store is named above, move it aside; if it is Dagster's run "
                f"storage, move {state_dir}/dagster_home aside (the run history is lost, "
                "DataHub and the write-back ledger are not)",
            )
    return None


def main() -> None:
    """The `upstream` command: a failure of the machine (a full disk, a corrupt file) is one
    line with the fix, never a traceback; a bug keeps its traceback."""
    try:
        app()
    except Exception as exc:  # noqa: BLE001 - the command line's boundary; unknown re-raised
        known = machine_failure(exc, str(settings_mod.load().state_dir))
        if known is None:
            raise
        err.print(
            f"[bold red]error:[/] {escape(known.problem)}\n  [bold]fix:[/] {escape(known.fix)}",
            highlight=False,
        )
        sys.exit(1)
