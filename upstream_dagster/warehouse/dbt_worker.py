"""dbt commands run by one dbt process that stays up for the life of the process asking.

A dbt CLI process spends about 1.6 s of CPU importing dbt before it reads the project; an
investigation, a detection bench or a sandbox verification runs dbt several times in a row.
The first command starts a worker (`python -m upstream_dagster.warehouse.dbt_worker`, the dbt
installed beside this interpreter) that runs each command through dbt's programmatic entry
point, `dbtRunner`, in the working directory and environment the command gives, with dbt's
output written where the CLI's would go, and answers what the CLI would have: the exit code
(0 success, 1 a node failed, 2 dbt could not run) and everything dbt printed. Commands are
run one at a time. The worker exits when the process that started it closes its pipe (it
exits, or is killed).

Request and answer are one JSON line each, on a pipe of their own; dbt's stdout and stderr are
the command's output file.

A command dbt could not finish can leave dbt's threads running after it returns; they open the
warehouse again after it was released, and dbt-duckdb reuses an open warehouse for the next
command whose profile names the same path, which every deployed copy and sandbox does
(relatively). So the worker answers and exits after such a command, or whenever anything is
left over: the next command starts a new worker, and it never reads or writes another
project's warehouse.

dagster-dbt runs dbt as a subprocess of its own (the estate's builds). It is given
`upstream-dbt` (`dbt_shim`) as its dbt executable: a small process that asks this process's
worker over a socket (`listen`) and prints what dbt prints as the worker runs the command, so a
build pays dbt's start-up once per process too. Anything the worker cannot serve, `upstream-dbt`
hands to the dbt CLI itself.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO, Any

INSTALLED = Path(sys.executable).with_name("dbt")  # the dbt-core installed beside Upstream
SHIM = INSTALLED.with_name("upstream-dbt")  # the dbt dagster-dbt runs: answered by the worker
SHIM_ENV = "UPSTREAM_DBT_SHIM"  # "PID SOCKET": where the process PID's worker listens


def serves(executable: str | Path) -> bool:
    """Whether ``executable`` is the dbt this worker runs (any other dbt is the CLI's to run)."""
    return Path(executable) in (INSTALLED, SHIM)


class _Worker:
    def __init__(self) -> None:
        read_answers, write_answers = os.pipe()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", __name__, str(write_answers)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(write_answers,),
            text=True,
        )
        os.close(write_answers)
        self.answers: IO[str] = os.fdopen(read_answers, "r")
        self.owner = os.getpid()  # a forked child starts its own, never shares this one

    def ask(self, task: dict[str, Any], cwd: Path, env: dict[str, str]) -> tuple[int, str]:
        """dbt's exit code and output. A worker that will not take another command has exited
        when this returns."""
        with tempfile.NamedTemporaryFile(  # dbt prints what a model prints, valid UTF-8 or not
            "r", prefix="upstream-dbt-", suffix=".log", errors="replace"
        ) as out:
            return self.ask_into(task, cwd, env, out.name), out.read()

    def ask_into(self, task: dict[str, Any], cwd: Path, env: dict[str, str], output: str) -> int:
        """dbt's exit code; what dbt prints is written to the file ``output`` as it runs."""
        assert self.proc.stdin is not None
        request = {**task, "cwd": str(cwd), "env": env, "output": output}
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.answers.readline()
        if not line:
            raise BrokenPipeError("the dbt worker exited")
        answer = json.loads(line)
        if answer["exiting"]:
            self.close()
        return int(answer["code"])

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.answers.close()


def captured(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A command's output as text, whatever bytes it printed (a model may print anything)."""
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, errors="replace", check=False
    )


_lock = threading.Lock()
_worker: _Worker | None = None


def run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``dbt ARGS`` in ``cwd`` with ``env``, as `subprocess.run` would report it (the output
    in stdout). A worker that died is started again for the next command; a command it died
    on is run by the CLI instead, so a crash costs time, never a result."""
    return _answered({"args": args}, cwd, env, [str(INSTALLED), *args])


def chain(
    commands: list[list[str]], cwd: Path, env: dict[str, str], alone: list[str]
) -> subprocess.CompletedProcess[str]:
    """`run_here(commands)` in the worker (one parse, then each command), or the process
    ``alone`` (`python -m upstream_dagster.warehouse.dbt_chain ...`) if the worker died."""
    return _answered({"chain": commands}, cwd, env, alone)


def _serving() -> _Worker:
    """This process's worker, started if there is none (or it died). Under ``_lock``."""
    global _worker
    if _worker is None or _worker.owner != os.getpid() or _worker.proc.poll() is not None:
        _worker = _Worker()
    return _worker


def _answered(
    task: dict[str, Any], cwd: Path, env: dict[str, str], alone: list[str]
) -> subprocess.CompletedProcess[str]:
    global _worker
    with _lock:
        try:
            code, output = _serving().ask(task, cwd, env)
        except (BrokenPipeError, OSError, ValueError):
            _worker = None
            return captured(alone, cwd, env)
    return subprocess.CompletedProcess(alone, code, output, "")


_listening: tuple[int, str] | None = None  # (this process, its socket) once `listen` ran


def listen() -> None:
    """Answer the `upstream-dbt` processes this process starts with its worker: a socket in a
    folder only this user can open, named to them by ``SHIM_ENV`` (with this process's id, so
    a child's child never asks the wrong one). Once per process."""
    global _listening
    if _listening is not None and _listening[0] == os.getpid():
        return
    prefix = f"{LISTENING}{os.getpid()}-"
    folder = tempfile.mkdtemp(prefix=prefix)
    if len(folder) > 90:  # a socket's path has at most 107 bytes
        shutil.rmtree(folder)
        folder = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    _sweep(Path(folder).parent)
    path = os.path.join(folder, "socket")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen()
    threading.Thread(target=_accept, args=(server,), name="upstream-dbt", daemon=True).start()
    atexit.register(shutil.rmtree, folder, True)
    _listening = (os.getpid(), path)
    os.environ[SHIM_ENV] = f"{os.getpid()} {path}"


LISTENING = "upstream-dbt-"  # + pid + "-": a listener's folder


def _sweep(parent: Path) -> None:
    """Remove the listener folders of this user's processes that are gone (one killed, or
    ended by `os._exit`, never ran its exit handler)."""
    for folder in parent.glob(f"{LISTENING}*-*"):
        pid = folder.name.removeprefix(LISTENING).split("-")[0]
        if not pid.isdigit() or folder.stat().st_uid != os.getuid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except OSError:
            pass  # alive (another user's process of that id): kept


def _accept(server: socket.socket) -> None:
    while True:
        conn, _ = server.accept()
        threading.Thread(target=_serve_shim, args=(conn,), daemon=True).start()


def _serve_shim(conn: socket.socket) -> None:
    """One `upstream-dbt` command: the worker's pid first (the shim forwards an interrupt to
    it), then ``{"code": N}``, or ``{"fallback": true}`` when no worker could run it."""
    global _worker
    with conn, conn.makefile("rw") as talk:
        try:
            request = json.loads(talk.readline())
        except ValueError:
            return
        with _lock:
            try:
                worker = _serving()
            except OSError:
                _send(talk, {"fallback": True})
                return
            if not _send(talk, {"worker": worker.proc.pid}):
                return  # the shim is gone: nothing to run the command for
            try:
                task, cwd = {"args": request["args"]}, Path(request["cwd"])
                code = worker.ask_into(task, cwd, request["env"], request["output"])
                answer: dict[str, Any] = {"code": code}
            except (BrokenPipeError, OSError, ValueError):
                _worker, answer = None, {"fallback": True}
        _send(talk, answer)


def _send(talk: IO[str], frame: dict[str, Any]) -> bool:
    try:
        talk.write(json.dumps(frame) + "\n")
        talk.flush()
    except OSError:
        return False
    return True


@atexit.register
def _stop() -> None:
    if _worker is not None and _worker.owner == os.getpid():
        _worker.close()


def _release_warehouse() -> None:
    """Close the DuckDB database dbt-duckdb keeps open for the process (its class-level
    environment): a CLI process let it go by exiting, and until it is closed no other process
    can open the warehouse file."""
    from dbt.adapters.duckdb.connections import DuckDBConnectionManager as Manager

    with Manager._LOCK:
        if Manager._ENV is not None:
            Manager._ENV.close()
            Manager._ENV = None


def _left_over() -> bool:
    """Whether a command left anything behind: a thread of dbt's still running, or a
    warehouse open after it was released (such a thread opened it again)."""
    from dbt.adapters.duckdb.connections import DuckDBConnectionManager as Manager

    return threading.active_count() > 1 or Manager._ENV is not None


def _answer(answers: IO[str], code: int, exiting: bool) -> None:
    answers.write(json.dumps({"code": code, "exiting": exiting}) + "\n")
    answers.flush()
    if exiting:  # dbt's threads are not waited for: they hold nothing the next worker needs
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def run_here(commands: list[list[str]]) -> int:
    """Parse once, then run ``commands`` in this process, printing ``ok`` or ``failed`` for
    each: 0 when every command succeeded, 1 when one failed, 2 when nothing could be parsed."""
    from dbt.cli.main import dbtRunner
    from dbt.contracts.graph.manifest import Manifest

    parsed = dbtRunner().invoke(["parse", "--quiet"])
    if not parsed.success or not isinstance(parsed.result, Manifest):
        print(f"dbt could not parse the project: {parsed.exception or 'see dbt.log'}")
        return 2
    runner = dbtRunner(manifest=parsed.result)
    failed = False
    for command in commands:
        result = runner.invoke([*command, "--quiet"])
        failed |= not result.success
        if result.exception is not None:
            print(f"dbt {' '.join(command)}: {result.exception}")
        print("ok" if result.success else "failed", flush=True)
    return 1 if failed else 0


def _serve(answers: IO[str]) -> None:
    from dbt.cli.main import dbtRunner

    # An interrupt the shim forwards (dagster-dbt's, on a terminated run) stops the command,
    # whatever this process inherited: started from a process that ignores SIGINT (a
    # background job, `nohup`, CI), Python would leave it ignored and dbt would run on.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for line in sys.stdin:
        request: dict[str, Any] = json.loads(line)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.stdout.flush()
        sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        code, ending = 2, True
        with open(request["output"], "w") as out:
            os.dup2(out.fileno(), 1)
            os.dup2(out.fileno(), 2)
            try:
                if "chain" in request:  # a chain that failed is rare: it ends the worker
                    code = run_here(request["chain"])
                    ending = code != 0
                else:  # dbt's own exit codes: 1 a node failed, 2 dbt could not run (it says why)
                    result = dbtRunner().invoke(request["args"])
                    code = 0 if result.success else (2 if result.exception is not None else 1)
                    ending = code == 2  # dbt raised: its threads may still run
            except BaseException as exc:  # noqa: BLE001 - answered as the CLI would (an interrupt too)
                code, ending = 2, True
                print(f"{type(exc).__name__}: {exc}")
            finally:
                # A worker that exits frees the warehouse by exiting, as the CLI does: closing
                # it here would wait for a query dbt's threads still run (an interrupted build).
                if not ending:
                    _release_warehouse()
                sys.stdout.flush()
                sys.stderr.flush()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
                os.close(saved[0])
                os.close(saved[1])
        _answer(answers, code, exiting=ending or _left_over())  # anything left: start afresh


if __name__ == "__main__":
    with os.fdopen(int(sys.argv[1]), "w") as pipe:
        _serve(pipe)
