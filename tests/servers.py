"""Servers a test starts on 127.0.0.1 and always stops: a free port, start, wait, stop."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _interruptible() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextmanager
def serve(
    cmd: list[str], probe: str, log_path: Path, cwd: Path, timeout: float = 180
) -> Iterator[None]:
    """Start ``cmd`` in its own process group, wait until ``probe`` answers, stop it after."""
    log = open(log_path, "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env={**os.environ},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        # A pytest-xdist worker (like any background job) ignores SIGINT, and its children
        # inherit that; Dagster maps SIGTERM to the SIGINT handler, so `dagster dev` and its
        # webserver then ignored the SIGTERM below and each stop waited for the SIGKILL.
        preexec_fn=_interruptible,
    )
    stopped = False
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                urllib.request.urlopen(probe, timeout=2).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(
                        f"{cmd[0]} did not start: " + log_path.read_text()[-2000:]
                    ) from None
                time.sleep(1)
        yield
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)  # what `dagster dev` gives its own webserver and daemon
            stopped = True
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
    # Reached only when the test itself passed: a server that ignores SIGTERM fails it.
    assert stopped, f"{cmd[0]} did not stop within 60 s of SIGTERM: " + log_path.read_text()[-800:]
