"""The `upstream` command line's app and the helpers every command shares."""

from __future__ import annotations

import errno
import importlib
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from types import ModuleType
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from upstream_dagster import settings as settings_mod
from upstream_dagster.clock import CLOCK_ENV, ClockError
from upstream_dagster.errors import UpstreamError

if TYPE_CHECKING:
    from upstream_dagster.defs.progress import Progress
    from upstream_dagster.spec.models import EstateSpec

app = typer.Typer(
    help="Upstream: desired-state control plane for DataHub.",
    no_args_is_help=True,
    add_completion=False,
)
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)
T = TypeVar("T")


class _Deferred(ModuleType):
    """Stands for a module until an attribute of it is first asked for, then imports it and
    answers from it (every time, so a patched attribute is seen). Nothing is looked up before:
    not even the module's parent package, whose own imports may be heavy."""

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self.__name__), attr)


def lazy(name: str) -> ModuleType:
    """Module ``name``, imported on first use: a command that never launches a Dagster run (a
    score read, a summary, --help) never pays for importing Dagster and the definitions, and
    one that reads only Dagster's journal (`queue`, `show`) never pays for DataHub's package."""
    return sys.modules.get(name) or _Deferred(name)


@contextmanager
def running(what: str) -> Iterator[None]:
    """Progress while a command's Dagster runs work, on stderr (a command's printed result
    stays clean): on a terminal a spinner naming the whole step; otherwise (a pipe, a file,
    CI) plain timestamped lines, so a long build is never silent."""
    # Dagster and DuckDB are imported only by a command that runs something
    from upstream_dagster.defs.progress import Progress, watching
    from upstream_dagster.warehouse.duckdb_warehouse import waiting as warehouse_waits

    def held(message: str) -> Progress:
        return Progress("wait", message)

    if err.is_terminal:
        with err.status(f"{what}...") as status:
            spinner = _Spinner(what, status.update, lambda: err.width)
            with watching(spinner.tell), warehouse_waits(lambda m: spinner.tell(held(m))):
                yield
        return
    lines = _Lines(what)
    try:
        with watching(lines.tell), warehouse_waits(lambda m: lines.tell(held(m))):
            yield
    except BaseException:
        lines.say(f"stopped: {what} ({lines.elapsed()})")
        raise
    lines.say(f"done: {what} ({lines.elapsed()})")


class _Spinner:
    """The spinner's text: the step (or phase) in full, then as much of ``what`` as fits."""

    def __init__(self, what: str, update: Callable[[str], None], width: Callable[[], int]):
        self.what, self.update, self.width = what, update, width
        self.phase, self.step, self.assets, self.waiting = "", "", 0, ""

    def tell(self, event: Progress) -> None:
        if event.kind == "phase":
            self.phase, self.step, self.assets = event.name, "", 0
        elif event.kind == "wait":
            self.waiting = event.name
        elif event.kind == "step":
            self.step, self.waiting = event.name, ""
        else:
            self.assets += 1
        self.update(self.text())

    def text(self) -> str:
        done = f"({self.assets} {'asset' if self.assets == 1 else 'assets'} materialized)"
        detail = self.waiting or " ".join(
            t for t in (f"step {self.step}" if self.step else "", done if self.assets else "") if t
        )
        label = self.phase or self.what
        room = self.width() - len(detail) - 8  # the spinner, the separator, a margin
        if len(label) > room:
            label = label[: max(room - 3, 0)] + "..." if room > 10 else ""
        return " - ".join(t for t in (label, detail) if t) or self.what


class _Lines:
    """Plain progress lines: every phase and step as it starts, and the assets materialized
    inside a long step at most every ten seconds."""

    def __init__(self, what: str) -> None:
        self.started = self.last = time.monotonic()
        self.assets = 0
        self.say(f"{what}...")

    def elapsed(self) -> str:
        return f"{time.monotonic() - self.started:.0f} s"

    def say(self, text: str) -> None:
        self.last = time.monotonic()
        err.print(f"{datetime.now():%H:%M:%S} {text}", markup=False, highlight=False)

    def tell(self, event: Progress) -> None:
        if event.kind == "asset":
            self.assets += 1
            if time.monotonic() - self.last >= 10:
                noun = "asset" if self.assets == 1 else "assets"
                self.say(f"  {self.assets} {noun} materialized (latest: {event.name})")
            return
        self.say(f"  step {event.name}" if event.kind == "step" else event.name)


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


def estate_spec(settings: settings_mod.Settings) -> EstateSpec:
    """estate.yaml, read; a bad file prints file:line and the fix, and exits 1. The spec's
    models load here, not with the command line: `queue` and `show` never read the file."""
    from upstream_dagster.spec.loader import load_estate

    return guarded(lambda: load_estate(settings.estate_file))


def plain(text: str) -> None:
    """Print text as it is: no markup, no highlighting."""
    out.print(text, markup=False, highlight=False)


def table(
    header: Sequence[str], rows: Sequence[Sequence[str]], right: frozenset[int] = frozenset()
) -> list[str]:
    """Aligned columns under a header, two spaces apart, numbers (``right``) to the right; the
    last column is never padded and nothing is cut (a terminal wraps a long line; a file keeps
    it whole)."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]

    def line(cells: Sequence[str]) -> str:
        padded = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        padded[-1] = cells[-1] if len(cells) - 1 not in right else padded[-1]
        return "  " + "  ".join(padded).rstrip()

    return [line(header), *(line(r) for r in rows)]


def print_summary(settings: settings_mod.Settings) -> None:
    # DataHub's package (and the spec's models behind it) only for the commands that read it:
    # `queue` and `show` read Dagster's journal alone
    from upstream_dagster.datahub import Target, connected
    from upstream_dagster.datahub.summary import summarize

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
