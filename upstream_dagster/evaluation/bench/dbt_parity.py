"""dbt commands through Upstream's dbt worker against the plain dbt CLI, on blind cases.

``python -m upstream_dagster.evaluation.bench.dbt_parity [CASES_DIR] [PROJECT ...]`` runs each
step of CASES_DIR/run_cases.json (default: the committed blind cases) on three fresh copies of
its project: the CLI on one, the worker on another (as `DbtProject.run` asks it), and
`upstream-dbt` on the third (as dagster-dbt runs it: a process of its own, JSON log lines,
answered by the same worker). It prints per step whether the exit codes and dbt's closing lines
agree, whether every DuckDB file is free afterwards, and whether each copy holds the same tables
and columns as the CLI's (a command that read or wrote another project's warehouse shows
there). One worker serves every case, one after another.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import duckdb

from upstream_dagster.warehouse import dbt_worker

CASES = Path(__file__).resolve().parents[3] / "evals" / "dbt-parity-2026-12-03"
CLOSING = ("Done.", "Encountered an error", "Nothing to do", "Completed with")


def closing_line(output: str) -> str:
    """dbt's last summary or error line, without colours or the time stamp."""
    said = [part for line in output.splitlines() for part in _message(line).splitlines()]
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in said]
    lines = [re.sub(r"^\d\d:\d\d:\d\d\s+", "", line).strip() for line in lines]
    kept = [line for line in lines if any(mark in line for mark in CLOSING)]
    return kept[-1] if kept else ""


def _message(line: str) -> str:
    """A JSON log line's message (`--log-format json`: ids and times differ per run)."""
    if not line.startswith("{"):
        return line
    try:
        return str(json.loads(line)["info"]["msg"])
    except (ValueError, KeyError, TypeError):
        return line


def locked(folder: Path) -> list[str]:
    """The DuckDB files in ``folder`` another process cannot open."""
    held = []
    for db in folder.glob("*.duckdb"):
        try:
            duckdb.connect(str(db)).close()
        except duckdb.Error:
            held.append(db.name)
    return held


def contents(folder: Path) -> dict[str, list[tuple[str, str, str]]]:
    """Every DuckDB file in ``folder``: its tables' (schema, table, column), sorted; a file
    another process holds counts as held (that is reported as a lock)."""
    found: dict[str, list[tuple[str, str, str]]] = {}
    for db in sorted(folder.rglob("*.duckdb")):
        try:
            with duckdb.connect(str(db), read_only=True) as con:
                rows = con.execute(
                    "select table_schema, table_name, column_name "
                    "from information_schema.columns order by 1, 2, 3"
                ).fetchall()
        except duckdb.Error:
            rows = [("held", "", "")]
        found[str(db.relative_to(folder))] = [(str(a), str(b), str(c)) for a, b, c in rows]
    return found


def run_case(src: Path, steps: list[dict[str, Any]], base: dict[str, str]) -> list[str]:
    """One line per step: OK or BAD, with what differed."""
    work = Path(tempfile.mkdtemp(prefix="upstream-parity-"))
    ways = ("cli", "worker", "upstream-dbt")
    dirs = {way: work / way for way in ways}
    for folder in dirs.values():
        shutil.copytree(src, folder)
    said = []
    try:
        for i, step in enumerate(steps):
            env = {**base, **(step.get("env") or {})}
            edit = step.get("edit")
            for folder in dirs.values():
                if edit:
                    (folder / edit["path"]).parent.mkdir(parents=True, exist_ok=True)
                    (folder / edit["path"]).write_text(edit["text"])
            runs = {way: _run(way, list(step["args"]), dirs[way], env) for way in ways}
            cli = runs["cli"]
            closing = {way: closing_line(done.stdout + done.stderr) for way, done in runs.items()}
            line = f"{src.name}[{i}] dbt {' '.join(step['args'])[:50]}: " + ", ".join(
                f"{way} {done.returncode}" for way, done in runs.items()
            )
            same = True
            for way in ways[1:]:
                held = locked(dirs[way])
                wrote = contents(dirs["cli"]) == contents(dirs[way])  # its own warehouse
                agree = runs[way].returncode == cli.returncode and closing[way] == closing["cli"]
                same &= agree and not held and wrote
                if held:
                    line += f"; {way} left locked: {', '.join(held)}"
                if not wrote:
                    line += f"; {way}'s warehouse differs from the CLI's (tables or columns)"
                if closing[way] != closing["cli"]:
                    line += f"\n    CLI:    {closing['cli'][:160]}\n    {way}: {closing[way][:160]}"
            said.append(f"{'OK ' if same else 'BAD'} {line}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return said


def _run(way: str, args: list[str], folder: Path, env: dict[str, str]) -> Any:
    env = {"DBT_PROFILES_DIR": str(folder), **env}
    if way == "cli":
        return dbt_worker.captured([str(dbt_worker.INSTALLED), *args], folder, env)
    if way == "worker":
        return dbt_worker.run(args, folder, env)
    shim = {**env, "DBT_LOG_FORMAT": "json", dbt_worker.SHIM_ENV: os.environ[dbt_worker.SHIM_ENV]}
    return dbt_worker.captured([str(dbt_worker.SHIM), *args], folder, shim)


def main(argv: list[str]) -> int:
    cases = Path(argv[0]) if argv and Path(argv[0]).is_dir() else CASES
    only = set(argv[1:] if argv and Path(argv[0]).is_dir() else argv)
    dbt_worker.listen()  # upstream-dbt's steps are answered by this process's worker
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DBT_", "BLIND_"))}
    base["DBT_SEND_ANONYMOUS_USAGE_STATS"] = "false"
    total = bad = 0
    for case in json.loads((cases / "run_cases.json").read_text()):
        if only and case["project"] not in only:
            continue
        for line in run_case(cases / "projects" / case["project"], case["steps"], base):
            print(line, flush=True)
            total += 1
            bad += line.startswith("BAD")
    print(
        f"{total - bad}/{total} steps answered by the worker and by upstream-dbt as the dbt CLI "
        "answers, every DuckDB file free and holding what the CLI's holds"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
