"""Which step a command's run is in, for the command line's spinner.

Every job carries a ``progress`` logger besides Dagster's console one. A run the command line
launches in its own process turns it on (run config ``loggers: progress``); the logger passes
each step's start to whoever listens here, and the spinner shows it. Runs launched from the UI
or a sensor never turn it on, and nothing is written anywhere by it."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import dagster as dg

_listeners: list[Callable[[str], None]] = []


class _StepStarts(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        meta = getattr(record, "dagster_meta", None) or {}
        event = meta.get("dagster_event")
        if event is not None and event.event_type_value == "STEP_START":
            for listener in list(_listeners):
                listener(str(event.step_key or ""))


def _progress(_: dg.InitLoggerContext) -> logging.Logger:
    log = logging.Logger("upstream.progress", level=logging.DEBUG)
    log.addHandler(_StepStarts())
    return log


progress_logger = dg.LoggerDefinition(
    _progress, description="Tells the command line that launched a run which step it is in."
)


LOGGERS = {"console": dg.colored_console_logger, "progress": progress_logger}


@contextmanager
def steps(listener: Callable[[str], None]) -> Iterator[None]:
    """``listener(step_key)`` at each step start of the runs launched inside the block."""
    _listeners.append(listener)
    try:
        yield
    finally:
        _listeners.remove(listener)
