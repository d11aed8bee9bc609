"""SQL from outside the build (a forensic probe, a scenario's faults), run where its bounds bind.

A deadline in the caller cannot stop what runs after ``execute`` returns (turning a result into
Python objects), and DuckDB's ``memory_limit`` does not count a ``generate_series`` list, a chunk
of ``repeat`` strings or the fetched rows: measured with a 5 s / 256 MB budget, three such
queries ran 59-193 s and took 4-20 GB. So the query runs in a small worker process
(`query_worker.py`) whose data segment is capped at the memory budget plus what the interpreter
and DuckDB need to start (``WORKER_BASE_MB``), which is killed at the deadline, fetch included,
and which sends back at most ``RESULT_ROWS`` rows and ``RESULT_BYTES`` bytes. This process never
reads a reply larger than that. Workers are kept (``IDLE_WORKERS``, holding no connection, so
a build can still write) and reused: starting one costs ~0.4 s once per process; a query
through a warm one took no longer than in-process (median 61 ms against 79 ms, both mostly
opening the file).
"""

from __future__ import annotations

import atexit
import os
import pickle
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from upstream_dagster.errors import UpstreamError
from upstream_dagster.reliability.sqlguard import MAX_ROWS
from upstream_dagster.warehouse.query_worker import HEADER, PICKLE

WORKER = Path(__file__).with_name("query_worker.py")
RESULT_ROWS = MAX_ROWS  # rows a result may bring back
RESULT_BYTES = 1 << 20  # bytes a result may bring back (its rows, pickled)
WORKER_BASE_MB = 160  # data segment of an idle worker (~100 MB measured) plus slack
WORKER_THREADS = 2
IDLE_WORKERS = 2
STARTUP_SECONDS = 30.0  # for a worker to import duckdb, on a loaded machine
_FRAME_SLACK = 64 << 10  # a reply's envelope around its rows


@dataclass(frozen=True)
class Result:
    rows: list[tuple[Any, ...]]
    cut: str = ""  # why the rows stop short of the result ('' when they are all of it)


class QueryFailed(UpstreamError):
    """DuckDB refused or failed statement ``index`` (a bad column, a type error...)."""

    def __init__(self, problem: str, fix: str, index: int = 0) -> None:
        super().__init__(problem, fix)
        self.index = index

    def __reduce__(self) -> tuple[type[QueryFailed], tuple[str, str, int]]:  # type: ignore[override]
        return (type(self), (self.problem, self.fix, self.index))


class _Worker:
    def __init__(self, memory_mb: int) -> None:
        self.memory_mb = memory_mb
        self.owner = os.getpid()
        limit = (memory_mb + WORKER_BASE_MB) << 20
        self.proc = subprocess.Popen(  # -P: the script's folder is not put on the path
            [sys.executable, "-P", str(WORKER), str(limit)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=0,
        )
        self.buffer = bytearray()
        self.spent = False  # killed, or it ended itself: never handed out again
        try:
            ready = self.receive(time.monotonic() + STARTUP_SECONDS)
        except _Gone as gone:
            ready = ("ended", gone.code)
        if ready != ("ready",):
            self.kill()
            raise UpstreamError(
                f"the worker that runs bounded queries did not start ({ready}): {WORKER}",
                f"run it by hand to see why (does `import duckdb` work with {sys.executable}?)",
            )

    def usable(self, memory_mb: int) -> bool:
        return self.memory_mb == memory_mb and self.owner == os.getpid() and self.alive()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def send(self, request: dict[str, Any]) -> None:
        data = pickle.dumps(request, protocol=PICKLE)
        assert self.proc.stdin is not None
        self.proc.stdin.write(HEADER.pack(len(data)) + data)

    def receive(self, deadline: float) -> tuple[Any, ...] | None:
        """The next reply, or None past ``deadline``. Raises `_Gone` if the worker ended."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while (frame := self._frame()) is None:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    return None
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise _Gone(self.proc.wait())
                self.buffer += chunk
        reply: tuple[Any, ...] = pickle.loads(frame)  # from our own worker script
        return reply

    def _frame(self) -> bytes | None:
        if len(self.buffer) < HEADER.size:
            return None
        (size,) = HEADER.unpack_from(self.buffer)
        if size > RESULT_BYTES + _FRAME_SLACK:  # never read it: the worker broke its caps
            raise _Gone(self.kill(), f"a reply of {size} bytes, past RESULT_BYTES")
        if len(self.buffer) < HEADER.size + size:
            return None
        frame = bytes(self.buffer[HEADER.size : HEADER.size + size])
        del self.buffer[: HEADER.size + size]
        return frame

    def kill(self) -> int:
        self.spent = True
        self.proc.kill()
        return self.proc.wait()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()  # EOF: the worker returns
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.kill()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class _Gone(Exception):
    def __init__(self, code: int, why: str = "") -> None:
        super().__init__(code)
        self.code, self.why = code, why


_lock = threading.Lock()
_idle: list[_Worker] = []


@contextmanager
def _checkout(memory_mb: int) -> Iterator[_Worker]:
    """A warm worker with this budget, or a new one; back to the idle list if it lived."""
    with _lock:
        worker = next((w for w in _idle if w.usable(memory_mb)), None)
        if worker is not None:
            _idle.remove(worker)
    worker = worker or _Worker(memory_mb)
    try:
        yield worker
    finally:
        keep = not worker.spent and not worker.buffer and worker.alive()
        if keep:
            with _lock:
                keep = len(_idle) < IDLE_WORKERS
                if keep:
                    _idle.append(worker)
        if not keep:
            worker.close()


def shutdown() -> None:
    """End every idle worker of this process (at exit, and for a test that measures them)."""
    with _lock:
        mine = [w for w in _idle if w.owner == os.getpid()]
        _idle.clear()
    for worker in mine:
        worker.close()


atexit.register(shutdown)


def run(
    path: Path, statements: list[str], seconds: float, memory_mb: int, *, write: bool = False
) -> Result:
    """Run ``statements`` on the warehouse at ``path``: one SELECT whose rows come back, or
    (``write``) statements in one transaction that commits only if all of them ran. Each
    statement gets ``seconds``; past them, or past ``memory_mb``, it is stopped and an
    `UpstreamError` names the limit; a statement DuckDB rejects raises `QueryFailed`."""
    request = {
        "path": str(path),
        "statements": statements,
        "write": write,
        "memory_mb": memory_mb,
        "threads": WORKER_THREADS,
        "max_rows": RESULT_ROWS,
        "max_bytes": RESULT_BYTES,
        "alarm": int(seconds) + 5,  # the worker's own backstop, should this process die
    }
    at = 0
    with _checkout(memory_mb) as worker:
        try:
            worker.send(request)
            while (reply := worker.receive(time.monotonic() + seconds)) is not None:
                if reply[0] == "done":
                    at = reply[1] + 1
                    continue
                if reply[0] == "ok":
                    return Result(reply[1], _cut(reply[2], len(reply[1])))
                worker.spent = reply[2] == "memory"  # the worker ends itself after one
                raise _failure(reply[2], reply[3], statements[reply[1]], memory_mb, reply[1])
        except (_Gone, BrokenPipeError) as exc:
            worker.spent = True
            gone = exc if isinstance(exc, _Gone) else _Gone(worker.kill())
            raise _died(gone, statements[min(at, len(statements) - 1)], memory_mb) from None
        worker.kill()
    raise too_slow(seconds, statements[min(at, len(statements) - 1)])


def too_slow(seconds: float, sql: str) -> UpstreamError:
    return UpstreamError(
        f"the query ran longer than {seconds:g}s and was stopped: {sql[:120]}",
        "narrow it (fewer rows, a simpler join), or raise "
        "policies.reliability.budgets.query_seconds",
    )


def too_big(memory_mb: int, sql: str, detail: str = "") -> UpstreamError:
    return UpstreamError(
        f"the query needed more than {memory_mb}MB and was stopped{detail}: {sql[:120]}",
        "narrow it, or raise policies.reliability.budgets.query_memory_mb",
    )


def _cut(cut: str, rows: int) -> str:
    if cut == "rows":
        return f"the result was cut at {rows} rows (RESULT_ROWS = {RESULT_ROWS}): the rest unread"
    if cut == "bytes":
        return (
            f"the result was cut at {rows} rows: the next passed RESULT_BYTES = "
            f"{RESULT_BYTES >> 20} MB (select fewer or narrower columns, or aggregate)"
        )
    return ""


def _failure(kind: str, message: str, sql: str, memory_mb: int, index: int) -> UpstreamError:
    if kind == "memory":
        return too_big(memory_mb, sql, f" ({message})" if message else "")
    if kind == "open":
        return UpstreamError(
            f"cannot open the warehouse: {message}",
            "another process holds it for writing; wait for the running build to finish",
        )
    return QueryFailed(f"query failed: {message}", "check the SQL against the relation", index)


def _died(gone: _Gone, sql: str, memory_mb: int) -> UpstreamError:
    """The worker ended without a reply: a signal (a failed allocation aborting DuckDB, the
    kernel's OOM killer) means the memory ran out; an exit code, a crash worth reporting."""
    if gone.why:
        return UpstreamError(
            f"the query's worker sent {gone.why} and was stopped: {sql[:120]}",
            "report it: the worker caps what it sends",
        )
    if gone.code < 0:
        name = next((s.name for s in signal.Signals if s == -gone.code), f"signal {-gone.code}")
        return too_big(memory_mb, sql, f" (its process ended by {name})")
    return UpstreamError(
        f"the process running the query ended with code {gone.code}: {sql[:120]}",
        f"run {WORKER} by hand to see why (does `import duckdb` work with {sys.executable}?)",
    )
