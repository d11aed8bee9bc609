"""What a command's run is doing, for the command line's spinner or its progress lines.

Every job carries a ``progress`` logger besides Dagster's console one. A run the command line
launches in its own process turns it on (run config ``loggers: progress``); the logger passes
each step's start and each asset it materializes to whoever listens here. A command that runs
several jobs in turn says which phase it is in (`phase`). Runs launched from the UI or a sensor
never turn it on, and nothing is written anywhere by it."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NamedTuple

import dagster as dg


class Progress(NamedTuple):
    # "step" (a step started), "asset" (an asset materialized), "phase" (a job began), "wait"
    # (a step waits for another run to release a pool)
    kind: str
    name: str


_listeners: list[Callable[[Progress], None]] = []


def _tell(event: Progress) -> None:
    for listener in list(_listeners):
        listener(event)


class _Events(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        meta = getattr(record, "dagster_meta", None) or {}
        event = meta.get("dagster_event")
        if event is None:
            return
        if event.event_type_value == "STEP_START":
            _tell(Progress("step", str(event.step_key or "")))
        elif event.event_type_value == "ASSET_MATERIALIZATION" and event.asset_key is not None:
            _tell(Progress("asset", event.asset_key.to_user_string()))
        elif event.event_type_value == "ENGINE_EVENT" and "blocked by limit for pool" in (
            event.message or ""
        ):  # a step waits for a pool's slot: another run holds the warehouse (a build)
            pool = (event.message or "").rsplit(" ", 1)[-1]
            _tell(
                Progress(
                    "wait",
                    f"step {event.step_key} waits its turn: another run holds "
                    f"the {pool} pool (a build, say) until it finishes",
                )
            )


def _progress(_: dg.InitLoggerContext) -> logging.Logger:
    log = logging.Logger("upstream.progress", level=logging.DEBUG)
    log.addHandler(_Events())
    return log


progress_logger = dg.LoggerDefinition(
    _progress, description="Tells the command line that launched a run which step it is in."
)


class _NoFailures(logging.Filter):
    """Drops what a run logs at ERROR (a step's failure with its stack trace, the steps it
    skipped, the run's failure): the command that launched it says what failed and the fix
    in one message; all of it stays in the run's event log (the UI)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < logging.ERROR


@dg.logger(
    {
        "log_level": dg.Field(str, is_required=False, default_value="INFO"),
        "name": dg.Field(str, is_required=False, default_value="dagster"),
        "failures": dg.Field(
            bool,
            is_required=False,
            default_value=True,
            description="False: leave step and run failures to the command that launched the "
            "run (the command line sets it); they stay in the event log either way.",
        ),
    },
    description="Dagster's colored console logger; the command line leaves failures to itself.",
)
def console_logger(init_context: dg.InitLoggerContext) -> logging.Logger:
    log = dg.colored_console_logger.logger_fn(init_context)
    if not init_context.logger_config["failures"]:
        for handler in log.handlers:
            handler.addFilter(_NoFailures())
    return log


LOGGERS = {"console": console_logger, "progress": progress_logger}


@contextmanager
def watching(listener: Callable[[Progress], None]) -> Iterator[None]:
    """``listener(event)`` at each step start, asset materialized and phase of the runs
    launched inside the block."""
    _listeners.append(listener)
    try:
        yield
    finally:
        _listeners.remove(listener)


@contextmanager
def steps(listener: Callable[[str], None]) -> Iterator[None]:
    """``listener(step_key)`` at each step start of the runs launched inside the block."""
    with watching(lambda e: listener(e.name) if e.kind == "step" else None):
        yield


def phase(text: str) -> None:
    """A command that runs several jobs in turn says which one it begins (``text``)."""
    _tell(Progress("phase", text))
