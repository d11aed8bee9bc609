"""Several dbt commands in one dbt process.

After a build, the ingestion needs two more dbt commands (`source freshness` for sources.json,
`docs generate` for the catalog and the compiled manifest). As two CLI processes each paid
dbt's start-up and the load of the project's parse (about 2-3 s of CPU per build run,
measured); here one process parses once (partially, from the deployed project's own parse)
and runs both through dbt's programmatic entry point, `dbtRunner`, with the parsed manifest.
That process is the dbt worker this process already keeps (`dbt_worker`), so a process that
ingests again and again (the evaluation, a test session, an investigation's sandbox) pays dbt's
start-up once, not once per build; a worker that died hands the chain to a process of its own.

``python -m upstream_dagster.warehouse.dbt_chain TARGET -- CMD ... -- CMD ...`` runs each CMD in
order into the target folder TARGET (every artifact of every command lands there, as dbt
writes them) and prints one line per command, ``ok`` or ``failed``, to stdout; dbt's own log
is TARGET/dbt.log. It exits 0 when every command succeeded, 1 when one failed, 2 when the
project could not be parsed (nothing was run).
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from upstream_dagster.warehouse import dbt_worker

SEPARATOR = "--"
PARTIAL_PARSE = "partial_parse.msgpack"


@dataclass(frozen=True)
class Chained:
    target: Path
    succeeded: tuple[bool, ...]  # one per command; empty when the project did not parse
    output: str  # what the process printed (its tail names a failure)


def run_chain(
    project_dir: Path,
    profiles_dir: Path | None,
    target: Path,
    commands: list[list[str]],
    env: dict[str, str] | None = None,
) -> Chained:
    """Run ``commands`` in one dbt process (the dbt installed beside this interpreter)."""
    target.mkdir(parents=True, exist_ok=True)
    parsed = project_dir / "target" / PARTIAL_PARSE  # the deployed project's own parse
    if parsed.exists() and not (target / PARTIAL_PARSE).exists():
        shutil.copy(parsed, target / PARTIAL_PARSE)
    run_env = {
        **(os.environ if env is None else env),
        "DBT_TARGET_PATH": str(target),
        "DBT_LOG_PATH": str(target),
        "DBT_PROJECT_DIR": str(project_dir),
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
        **({"DBT_PROFILES_DIR": str(profiles_dir)} if profiles_dir else {}),
    }
    argv = [sys.executable, "-m", __name__, str(target)]
    for command in commands:
        argv += [SEPARATOR, *command]
    done = dbt_worker.chain(commands, project_dir, run_env, alone=argv)
    said = [line for line in done.stdout.splitlines() if line in ("ok", "failed")]
    return Chained(target, tuple(s == "ok" for s in said), (done.stdout + done.stderr).strip())


def _commands(argv: list[str]) -> list[list[str]]:
    commands: list[list[str]] = []
    for word in argv:
        if word == SEPARATOR:
            commands.append([])
        elif commands:
            commands[-1].append(word)
    return [c for c in commands if c]


def main(argv: list[str]) -> int:
    return dbt_worker.run_here(_commands(argv[1:]))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
