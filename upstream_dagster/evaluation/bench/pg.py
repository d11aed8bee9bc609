"""A throwaway PostgreSQL server on 127.0.0.1, from Debian's packages, for the deployment's
tests and benches: started in a temporary folder (as the `postgres` user when run as root, which
PostgreSQL refuses to run as) and always stopped."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from glob import glob
from pathlib import Path

from upstream_dagster.errors import UpstreamError


def bin_dir() -> Path | None:
    found = sorted(glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _exit_on_term(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


@contextmanager
def server() -> Iterator[int]:
    """A new cluster with a `dagster` user and database: its port."""
    found = bin_dir()
    if found is None:
        raise UpstreamError(
            "PostgreSQL's server is missing", "`make system-deps` installs Debian's postgresql"
        )
    data = Path(tempfile.mkdtemp(prefix="upstream-pg-")) / "data"
    data.mkdir()
    as_user: list[str] = []
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        for path in (data.parent, data):
            os.chown(path, user.pw_uid, user.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    port = _free_port()

    def run(*cmd: str) -> None:
        subprocess.run([*as_user, *cmd], check=True, capture_output=True, timeout=120)

    # A throwaway cluster, deleted when done: nothing in it has to outlive a crash of the
    # machine, so it never waits on fsync (a killed client, what the tests and benches kill,
    # is unaffected: PostgreSQL's locks and transactions are the same without it).
    run(str(found / "initdb"), "--no-sync", "-D", str(data), "-U", "dagster", "-A", "trust")
    durability = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    run(
        str(found / "pg_ctl"), "-D", str(data), "-l", str(data / "server.log"), "-w",
        "-o", f"-h 127.0.0.1 -p {port} -k {data} {durability}", "start",
    )  # fmt: skip
    # a bench stopped with SIGTERM (a timeout, a kill) still stops its server: the handler
    # turns the signal into SystemExit, so the finally below runs
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _exit_on_term)
    try:
        run(str(found / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "dagster",
            "dagster")  # fmt: skip
        yield port
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        run(str(found / "pg_ctl"), "-D", str(data), "-m", "fast", "stop")
        shutil.rmtree(data.parent, ignore_errors=True)


def url(port: int, database: str = "dagster") -> str:
    return f"postgresql://dagster@127.0.0.1:{port}/{database}"


def fresh_database(port: int) -> str:
    """A new, empty database on the server: its name."""
    import psycopg2  # type: ignore[import-untyped]

    name = f"t_{os.getpid()}_{time.monotonic_ns()}"
    admin = psycopg2.connect(url(port))
    admin.autocommit = True
    admin.cursor().execute(f"CREATE DATABASE {name}")
    admin.close()
    return name
