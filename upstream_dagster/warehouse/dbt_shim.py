"""`upstream-dbt`: the dbt executable dagster-dbt runs for the estate's builds.

dagster-dbt runs every dbt command as a new process and reads what it prints (dbt's JSON log
lines) and the artifacts it writes. A dbt CLI process spends seconds importing dbt before it
reads the project; this one starts in milliseconds and asks the dbt worker of the process that
started it (`dbt_worker.listen`) to run the command, in this working directory and environment,
then prints what dbt prints as it is printed and exits with dbt's exit code, as the CLI would.

When no worker serves it (it was started by another process than the one listening, or none
listens, or no worker could start), it becomes the dbt CLI (`exec`, same process). When the
worker dies during the command, it says so and exits 2, as dbt does when it could not finish.
An interrupt (dagster-dbt's on a terminated run) is passed to the worker, as the CLI takes it.
Only the standard library: this process must start fast.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys
import tempfile
from types import FrameType
from typing import Any, NoReturn

from upstream_dagster.warehouse.dbt_worker import INSTALLED, SHIM_ENV

POLL = 0.05  # seconds between looks at dbt's output while the worker runs the command


def _cli(argv: list[str]) -> NoReturn:
    os.execv(INSTALLED, [str(INSTALLED), *argv])


class _Answers:
    """The listener's frames, one JSON object a line."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn, self.buffer = conn, b""

    def next(self, wait: float | None) -> dict[str, Any] | None:
        """The next frame; None if none came within ``wait`` seconds; {} if the listener hung
        up (its process died)."""
        while b"\n" not in self.buffer:
            if wait is not None and not select.select([self.conn], [], [], wait)[0]:
                return None
            data = self.conn.recv(65536)
            if not data:
                return {}
            self.buffer += data
        line, _, self.buffer = self.buffer.partition(b"\n")
        frame: dict[str, Any] = json.loads(line)
        return frame


def main() -> None:
    argv = sys.argv[1:]
    owner, _, path = os.environ.get(SHIM_ENV, "").partition(" ")
    if not path or owner != str(os.getppid()):
        _cli(argv)
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(path)
    except OSError:
        _cli(argv)
    handle, output = tempfile.mkstemp(prefix="upstream-dbt-", suffix=".log")
    try:
        code = _asked(conn, argv, handle, output)
    finally:
        conn.close()
        os.unlink(output)
    if code is None:
        _cli(argv)
    sys.exit(code)


def _asked(conn: socket.socket, argv: list[str], handle: int, output: str) -> int | None:
    """dbt's exit code, with what it printed copied to stdout; None if the CLI must run it."""
    request = {"args": argv, "cwd": os.getcwd(), "env": dict(os.environ), "output": output}
    conn.sendall((json.dumps(request) + "\n").encode())
    answers = _Answers(conn)
    first = answers.next(None)
    if not first or "worker" not in first:
        return None
    worker, stopped = int(first["worker"]), []

    def stop(signum: int, _frame: FrameType | None) -> None:
        stopped.append(signum)
        os.kill(worker, signal.SIGINT)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    printed = False
    out = sys.stdout.buffer
    with os.fdopen(handle, "rb") as log:
        while True:
            chunk = log.read(65536)
            if chunk:
                out.write(chunk)
                out.flush()
                printed = True
                continue
            answer = answers.next(POLL)
            if answer is not None:
                break
        rest = log.read()  # the worker closed the file before it answered
        out.write(rest)
        out.flush()
    if "code" in answer:
        return int(answer["code"])
    if not (printed or rest or stopped):
        return None  # nothing ran: the CLI runs it
    out.write(b"upstream-dbt: the dbt worker stopped before the command finished\n")
    out.flush()
    return 2


if __name__ == "__main__":
    main()
