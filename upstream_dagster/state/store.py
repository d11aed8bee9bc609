"""The gate's store: where every run of a deployment keeps the gate's state.

Claims (a batch written at most once), one-time approvals, the trusted policy, the write-back
lock and the pre-image ledger live here, and nowhere private to one process: a SQLite file in
the state folder on the embedded default (``gate.sqlite``), the deployment's own PostgreSQL
on a cluster (the database Dagster's storage uses, or ``UPSTREAM_GATE_DB``). Both speak the
same SQL through one small adapter; every change is made in a transaction serialized against
every other (SQLite ``BEGIN IMMEDIATE``; a PostgreSQL transaction-scoped advisory lock), so
"read, decide, write" is atomic across threads, processes and hosts.
"""

from __future__ import annotations

import errno
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from upstream_dagster.errors import UpstreamError, redact

if TYPE_CHECKING:
    from upstream_dagster.settings import Settings

GATE_DB_ENV = "UPSTREAM_GATE_DB"
_ADVISORY_KEY = 0x5A7E_6A7E  # the one advisory lock every gate transaction takes on PostgreSQL

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS upstream_claims (batch_digest TEXT PRIMARY KEY,
        run_id TEXT NOT NULL, reviewer TEXT NOT NULL, claimed_at BIGINT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS upstream_ledger (run_id TEXT NOT NULL, seq BIGINT NOT NULL,
        batch_digest TEXT NOT NULL, pre_image TEXT NOT NULL, undone BIGINT NOT NULL DEFAULT 0,
        PRIMARY KEY (run_id, seq))""",
    """CREATE TABLE IF NOT EXISTS upstream_released (batch_digest TEXT NOT NULL,
        run_id TEXT NOT NULL, reviewer TEXT NOT NULL, released_at BIGINT NOT NULL,
        why TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS upstream_rejections (proposal_id TEXT PRIMARY KEY,
        batch_digest TEXT NOT NULL, reviewer TEXT NOT NULL, reason TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS upstream_approvals (nonce TEXT PRIMARY KEY,
        kind TEXT NOT NULL, digest TEXT NOT NULL, policy TEXT NOT NULL,
        issued_at DOUBLE PRECISION NOT NULL, spent_at DOUBLE PRECISION, spent_why TEXT)""",
    """CREATE TABLE IF NOT EXISTS upstream_trust (seq BIGINT PRIMARY KEY, policy TEXT NOT NULL,
        body TEXT NOT NULL, how TEXT NOT NULL, adopted_at DOUBLE PRECISION NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS upstream_lock (name TEXT PRIMARY KEY, token TEXT NOT NULL,
        run_id TEXT NOT NULL, host TEXT NOT NULL, pid BIGINT NOT NULL, purpose TEXT NOT NULL,
        taken_at DOUBLE PRECISION NOT NULL, expires_at DOUBLE PRECISION NOT NULL)""",
)


class Tx(Protocol):
    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    def now(self) -> float: ...


class _Cursor:
    """One transaction's statements, written with ``?`` placeholders for either engine."""

    def __init__(self, con: Any, postgres: bool) -> None:
        self._con = con
        self._postgres = postgres

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cur = self._con.cursor()
        try:
            cur.execute(sql.replace("?", "%s") if self._postgres else sql, tuple(params))
            return list(cur.fetchall()) if cur.description else []
        finally:
            cur.close()

    def now(self) -> float:
        """The store's own clock: one clock for every host that shares a PostgreSQL store."""
        if self._postgres:
            (row,) = self.execute("SELECT EXTRACT(EPOCH FROM clock_timestamp())::float8")
            return float(row[0])
        return time.time()


def corrupt(where: str, exc: BaseException) -> UpstreamError:
    return UpstreamError(
        f"the gate's store {where} cannot be read ({str(exc).splitlines()[0]})",
        f"move it aside (`mv {where} {where}.corrupt`) and run the command again: a new store "
        "is made, the policy in force is read back from gate-trust.jsonl beside it, and "
        "`upstream reset` still undoes every write from the ledger copies in the state "
        "folder's ledger/ (plan again to approve again)",
    )


def full(where: str, exc: OSError) -> UpstreamError:
    return UpstreamError(
        f"no space left to write the gate's store {where} ({exc.strerror or exc})",
        "free disk space where the state folder is (UPSTREAM_STATE_DIR) and run the command "
        "again; nothing was written to DataHub after the failure",
    )


@dataclass(frozen=True)
class GateStore:
    """Where the gate keeps its state: ``url`` is ``sqlite:///PATH`` or a PostgreSQL URL."""

    url: str

    @classmethod
    def local(cls, state_dir: Path) -> GateStore:
        return cls(f"sqlite:///{Path(state_dir) / 'gate.sqlite'}")

    @classmethod
    def at(cls, db: str | None, state_dir: Path) -> GateStore:
        """The store at ``db`` (a PostgreSQL URL), else gate.sqlite in the state folder."""
        return cls(db) if db else cls.local(state_dir)

    @classmethod
    def without_dagster(cls, settings: Settings) -> GateStore | None:
        """The deployment's store when Dagster need not be asked where it is: UPSTREAM_GATE_DB,
        or gate.sqlite beside Dagster's embedded storage; None when the instance says."""
        if settings.gate_db or settings.embedded_storage:
            return cls.at(settings.gate_db, settings.state_dir)
        return None

    @property
    def postgres(self) -> bool:
        return self.url.startswith(("postgresql", "postgres:"))

    @property
    def where(self) -> str:
        """The store as a person may read it (never a password)."""
        return self.url.removeprefix("sqlite:///") if not self.postgres else redact(self.url)

    @property
    def shared(self) -> bool:
        """Whether runs on other hosts see this store (a PostgreSQL store)."""
        return self.postgres

    @contextmanager
    def tx(self) -> Iterator[Tx]:
        """A transaction serialized against every other change to the store."""
        with self._connection() as (con, postgres):
            try:
                if postgres:
                    con.cursor().execute("SELECT pg_advisory_xact_lock(%s)", (_ADVISORY_KEY,))
                else:
                    con.execute("BEGIN IMMEDIATE")
                yield _Cursor(con, postgres)
                con.commit() if postgres else con.execute("COMMIT")
            except BaseException:
                con.rollback()
                raise

    @contextmanager
    def read(self) -> Iterator[Tx]:
        """A read. A local store that does not exist yet reads as empty and is not made: a
        read-only command (the dial, the queue, the assistant's tools) leaves no file behind."""
        if not self.postgres and not Path(self.where).exists():
            con = sqlite3.connect(":memory:")
            try:
                for statement in SCHEMA:
                    con.execute(statement)
                yield _Cursor(con, False)
            finally:
                con.close()
            return
        with self._connection() as (con, postgres):
            try:
                yield _Cursor(con, postgres)
            finally:
                con.rollback()

    @contextmanager
    def _connection(self) -> Iterator[tuple[Any, bool]]:
        con = _postgres(self.url) if self.postgres else self._sqlite()
        try:
            _ready(self, con)
            yield con, self.postgres
        except sqlite3.DatabaseError as exc:
            if "not a database" in str(exc) or "malformed" in str(exc):
                raise corrupt(self.where, exc) from None
            if "disk is full" in str(exc) or "disk I/O error" in str(exc):
                raise full(self.where, OSError(errno.ENOSPC, str(exc))) from None
            raise
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                raise full(self.where, exc) from None
            raise
        finally:
            con.close()

    def _sqlite(self) -> sqlite3.Connection:
        path = Path(self.where)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UpstreamError(
                f"cannot make the state folder {path.parent}: {exc.strerror or exc}",
                "point UPSTREAM_STATE_DIR at a folder you can write",
            ) from None
        if path.exists() and not path.is_file():
            raise corrupt(self.where, OSError(f"{path} is not a file"))
        con = sqlite3.connect(str(path), timeout=60, isolation_level=None)
        try:
            _wal(con)
        except sqlite3.DatabaseError as exc:
            con.close()
            if "not a database" in str(exc) or "malformed" in str(exc):
                raise corrupt(self.where, exc) from None
            if "unable to open" in str(exc) or "readonly" in str(exc):
                raise UpstreamError(
                    f"cannot open the gate's store {self.where} ({exc})",
                    "make the state folder and the file writable by the user running Upstream "
                    "(UPSTREAM_STATE_DIR)",
                ) from None
            raise
        return con


_made: set[str] = set()  # PostgreSQL stores whose tables this process has already made


def _ready(store: GateStore, con: Any) -> None:
    """The tables exist (made once per process, or once per file: a file moved aside and made
    anew has none; concurrent makers are serialized)."""
    if store.postgres and store.url in _made:
        return
    if (
        not store.postgres
        and con.execute("SELECT 1 FROM sqlite_master WHERE name = 'upstream_lock'").fetchone()
    ):
        return
    if store.postgres:
        cur = con.cursor()
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (_ADVISORY_KEY,))
        for statement in SCHEMA:
            cur.execute(statement)
        con.commit()
    else:
        con.execute("BEGIN IMMEDIATE")
        for statement in SCHEMA:
            con.execute(statement)
        _migrate_v1(con)
        con.execute("COMMIT")
    _made.add(store.url)


def _migrate_v1(con: sqlite3.Connection) -> None:
    """A gate.sqlite from before the shared store kept claims and the ledger under other
    names: carry them over once, so a write killed before an upgrade stays undoable."""
    names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for old, new in (
        ("claims", "upstream_claims"),
        ("ledger", "upstream_ledger"),
        ("released", "upstream_released"),
        ("rejections", "upstream_rejections"),
    ):
        if old in names:
            con.execute(f"INSERT OR IGNORE INTO {new} SELECT * FROM {old}")
            con.execute(f"DROP TABLE {old}")
    if "holders" in names:
        con.execute("DROP TABLE holders")


def _wal(con: sqlite3.Connection) -> None:
    """Switch a new gate file to WAL. The switch needs an exclusive lock and SQLite answers
    "database is locked" at once instead of waiting when another process holds it, so several
    first opens at the same moment retry; once the file is WAL it stays WAL."""
    for attempt in range(100):
        if con.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
            return
        try:
            con.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError:
            if attempt == 99:
                raise
            time.sleep(0.05)


def _postgres(url: str) -> Any:
    try:
        import psycopg2  # type: ignore[import-untyped]
    except ImportError:
        raise UpstreamError(
            f"the gate's store is PostgreSQL ({redact(url)}) but psycopg2 is not installed",
            "pip install 'upstream-dagster[production]'",
        ) from None
    dsn = url.replace("postgresql+psycopg2://", "postgresql://", 1)
    try:
        return psycopg2.connect(dsn, connect_timeout=10)
    except psycopg2.OperationalError as exc:
        raise UpstreamError(
            f"cannot reach the gate's store {redact(url)}: {str(exc).strip().splitlines()[0]}",
            f"check the deployment's database settings ({GATE_DB_ENV}, or Dagster's storage)",
        ) from None
