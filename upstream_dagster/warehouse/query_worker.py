"""The process a bounded query runs in, started and fed by `bounded.py` (which imports only
its framing).

It runs as a plain script (``python -P query_worker.py DATA_BYTES``) importing only the
standard library and duckdb, so it starts without the package on the path. Before duckdb loads
it caps its own data segment (RLIMIT_DATA, not RLIMIT_AS: DuckDB reserves some 600 MB of address
space at connect that it never touches, while its data segment stays near 100 MB), so a value
DuckDB does not count against ``memory_limit`` (a 16 GB ``generate_series``, a chunk of huge
``repeat`` strings, the rows turned into Python objects) fails here, not on the machine.

Frames on stdin/stdout are an 8-byte length and a pickle. A request is a dict (see
`bounded.py`); the replies are ``("ready",)`` once, at start, then per request ``("done", i)``
after each statement of a write and one ``("ok", rows, cut)`` or ``("error", i, kind,
message)``. EOF on stdin ends the process; so does SIGALRM (no handler: the default kills),
armed past the parent's deadline in case the parent died without closing the pipe.
"""

from __future__ import annotations

import os
import pickle
import resource
import signal
import struct
import sys
from typing import IO, Any

HEADER = struct.Struct("!Q")
PICKLE = pickle.HIGHEST_PROTOCOL


def send(out: IO[bytes], message: tuple[Any, ...]) -> None:
    data = pickle.dumps(message, protocol=PICKLE)
    out.write(HEADER.pack(len(data)))
    out.write(data)
    out.flush()


def receive(inp: IO[bytes]) -> dict[str, Any] | None:
    head = inp.read(HEADER.size)
    if len(head) < HEADER.size:
        return None
    (size,) = HEADER.unpack(head)
    request: dict[str, Any] = pickle.loads(inp.read(size))  # from the parent that started us
    return request


def fetch(cursor: Any, max_rows: int, max_bytes: int) -> tuple[list[tuple[Any, ...]], str]:
    """Rows one at a time until the result ends or passes a cap ('rows' or 'bytes'): a row is
    measured as it will travel, and no more than one row past the caps is ever held."""
    rows: list[tuple[Any, ...]] = []
    size = 0
    while (row := cursor.fetchone()) is not None:
        if len(rows) == max_rows:
            return rows, "rows"
        size += len(pickle.dumps(row, protocol=PICKLE))
        if size > max_bytes:
            return rows, "bytes"
        rows.append(row)
    return rows, ""


def run(request: dict[str, Any], out: IO[bytes], at: list[int]) -> None:
    import duckdb

    config: dict[str, str | bool | int | float | list[str]] = {
        "enable_external_access": False,
        "threads": int(request["threads"]),
        "memory_limit": f"{int(request['memory_mb'])}MB",
    }
    write = bool(request["write"])
    rows: list[tuple[Any, ...]] = []
    cut = ""
    con = duckdb.connect(request["path"], read_only=not write, config=config)
    try:
        con.execute("SET enable_progress_bar = false")  # a connection's own setting
        if not write:
            cursor = con.execute(request["statements"][0])
            rows, cut = fetch(cursor, int(request["max_rows"]), int(request["max_bytes"]))
        else:
            con.execute("BEGIN")  # all statements or none: closing without COMMIT rolls back
            for i, sql in enumerate(request["statements"]):
                at[0] = i
                signal.alarm(int(request["alarm"]))
                con.execute(sql)
                send(out, ("done", i))
            con.execute("COMMIT")
    finally:
        con.close()
    # only once the file is let go: the caller may open it for writing as soon as it hears
    send(out, ("ok", rows, cut))


def serve(inp: IO[bytes], out: IO[bytes]) -> None:
    import duckdb

    send(out, ("ready",))  # a query's deadline starts after this start-up
    while (request := receive(inp)) is not None:
        at = [0]
        signal.alarm(int(request["alarm"]))
        try:
            run(request, out, at)
        except (MemoryError, duckdb.OutOfMemoryException) as exc:
            send(out, ("error", at[0], "memory", str(exc).splitlines()[0] if str(exc) else ""))
            return  # what a failed allocation left behind is not worth keeping
        except duckdb.IOException as exc:
            send(out, ("error", at[0], "open", str(exc).splitlines()[0]))
        except duckdb.Error as exc:
            send(out, ("error", at[0], "failed", str(exc).splitlines()[0]))
        signal.alarm(0)


def main() -> None:
    limit = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    signal.signal(signal.SIGALRM, signal.SIG_DFL)  # an ignored SIGALRM survives exec
    # the protocol gets its own copy of stdout; fd 1 becomes stderr, so that nothing DuckDB or
    # Python prints can land inside a frame
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    serve(sys.stdin.buffer, out)


if __name__ == "__main__":
    main()
