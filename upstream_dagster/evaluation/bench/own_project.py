"""The whole coverage loop on a dbt-duckdb project Upstream has never seen, as a new team runs it.

    python -m upstream_dagster.evaluation.bench.own_project PROJECT ESTATE [--state DIR]

Runs the README's commands against PROJECT (the folder holding dbt_project.yml) and ESTATE (the
team's estate.yaml) in a fresh state folder: ``upstream build``, ``plan``, ``approve`` with the
digest ``plan`` printed, ``verify``, ``reset --yes``. Prints one line per check: the project's
files are untouched (a digest of every file before and after), the dial before, projected,
measured and after reset, and whether reset brought DataHub Lite back byte for byte. Exits 1
when any check fails. The estate must name a reviewer the gate accepts without a key
(``identity: not-enforced``), as the demo does. ``--feeds SCRIPT`` names the SQL script that
loads the project's raw feeds (UPSTREAM_FEEDS), for a project whose sources are not seeds.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

from upstream_dagster.spec.loader import load_estate

OVERALL = re.compile(r"^overall\s.*?(\d+(?:\.\d+)?)%", re.MULTILINE)
DIGEST = re.compile(r"--digest ([0-9a-f]{16})")


def tree_digest(folder: Path) -> str:
    """Every file under ``folder`` (names and bytes), so an edit anywhere changes it."""
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and ".git" not in p.parts):
        h.update(str(path.relative_to(folder)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def lite_digest(lite: Path) -> str:
    """Every row of DataHub Lite's aspect and edge tables, in a stable order."""
    h = hashlib.sha256()
    with sqlite3.connect(lite) as con:
        for table in ("metadata_aspect_v2", "metadata_edge_v2"):
            for row in con.execute(f"select * from {table} order by 1, 2, 3"):  # noqa: S608
                h.update(repr(row).encode())
    return h.hexdigest()


def _run(env: dict[str, str], *argv: str, stdin: str = "") -> str:
    done = subprocess.run(
        [sys.executable, "-m", "upstream_dagster.cli", *argv],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"upstream {' '.join(argv)} failed:\n{done.stdout[-3000:]}{done.stderr}")
    return done.stdout


def _overall(text: str) -> float:
    found = OVERALL.search(text)
    if not found:
        raise SystemExit(f"no overall line in:\n{text[-2000:]}")
    return float(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("project", type=Path)
    parser.add_argument("estate", type=Path)
    parser.add_argument("--state", type=Path, default=None)
    parser.add_argument(
        "--feeds", type=Path, default=None, help="the SQL script that loads the raw feeds"
    )
    args = parser.parse_args()
    project, estate_file = args.project.resolve(), args.estate.resolve()
    reviewer = load_estate(estate_file).policies.approvers[0]
    state = args.state or Path(tempfile.mkdtemp(prefix="upstream-own-"))
    env = dict(os.environ)
    env.update(
        UPSTREAM_DBT_SOURCE=str(project),
        UPSTREAM_ESTATE=str(estate_file),
        UPSTREAM_STATE_DIR=str(state),
    )
    env.pop("UPSTREAM_FEEDS", None)
    if args.feeds:  # a project whose sources a script loads (`make bench-own ... FEEDS=`)
        env["UPSTREAM_FEEDS"] = str(args.feeds.resolve())
    files_before = tree_digest(project)
    built = _run(env, "build")
    before = _overall(built)
    lite = state / "datahub-lite.sqlite"
    graph_before = lite_digest(lite)
    plan = _run(env, "plan")
    digest = DIGEST.search(plan)
    if not digest:
        raise SystemExit(f"plan printed no digest:\n{plan[-2000:]}")
    projected = float(re.findall(r"-> (\d+(?:\.\d+)?)% projected", plan)[0])
    checks = {}
    if re.search(r": 0 proposals,", plan):
        measured = after = before  # nothing the graph grounds a proposal on: nothing to write
        print("plan proposed nothing: the loop has nothing to write (its violations stay)")
    else:
        _run(
            env,
            "approve",
            "--all",
            "--digest",
            digest.group(1),
            "--reviewer",
            reviewer,
            stdin="y\n",
        )
        measured = _overall(_run(env, "score"))
        checks["verify says equal"] = "equal" in _run(env, "verify")
        _run(env, "reset", "--yes")
        after = _overall(_run(env, "score"))
    checks.update(
        {
            "project files untouched": tree_digest(project) == files_before,
            "projected == measured": abs(projected - measured) < 0.05,
            "reset brings the dial back": abs(after - before) < 0.05,
            "reset brings DataHub Lite back byte for byte": lite_digest(lite) == graph_before,
        }
    )
    print(f"project   {project}")
    print(f"state     {state}")
    print(f"dial      before {before:.1f}%  projected {projected:.1f}%  measured {measured:.1f}%")
    print(f"          after reset {after:.1f}%  (batch {digest.group(1)}, reviewer {reviewer})")
    for name, held in checks.items():
        print(f"{'PASS' if held else 'FAIL'}  {name}")
    print(f"{sum(checks.values())}/{len(checks)} checks held")
    if not all(checks.values()):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
