"""A state folder on a disk that fills up during `upstream approve`: run as a script, as root or
inside a user and mount namespace (``unshare -rm``), because it mounts a small tmpfs.

``python -m tests.disk_full SEED_STATE WORK`` copies the built estate onto a tmpfs, plans,
shrinks the tmpfs to what is used and a little room to spare, approves (the disk fills), then
makes room and resets. It prints one JSON
object: what each command said and whether DataHub read byte-identical at the end."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.test_coverage import graph_digest
from upstream_dagster.settings import load

ROOT = Path(__file__).resolve().parent.parent


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "upstream_dagster.cli", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip


def main() -> None:
    seed, work = Path(sys.argv[1]), Path(sys.argv[2])
    disk = work / "disk"
    disk.mkdir(parents=True, exist_ok=True)
    used = sum(f.stat().st_size for f in seed.rglob("*") if f.is_file())
    spare = int(sys.argv[3]) if len(sys.argv) > 3 else 300_000
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={used * 3}", "tmpfs", str(disk)], check=True
    )
    try:
        state = disk / "state"
        shutil.copytree(seed, state, ignore=shutil.ignore_patterns("dagster_home"))
        env = {**os.environ, "UPSTREAM_STATE_DIR": str(state)}
        os.environ.update(env)
        before = graph_digest(load())
        planned = _cli(env, "plan", "--record")
        digest = next(
            (line.split()[1].rstrip(":") for line in planned.stdout.splitlines()
             if line.startswith("batch ")), "",
        )  # fmt: skip
        # the disk as full as it gets: what is there now, and a little room to spare
        taken = shutil.disk_usage(disk).used
        subprocess.run(["mount", "-o", f"remount,size={taken + spare}", str(disk)], check=True)
        approved = _cli(env, "approve", "--all", "--digest", digest, "--reviewer", "alice", "--yes")
        subprocess.run(["mount", "-o", f"remount,size={used * 4}", str(disk)], check=True)
        reset = _cli(env, "reset", "--yes")
        print(
            json.dumps(
                {
                    "planned": planned.returncode,
                    "approve_rc": approved.returncode,
                    "approve_said": approved.stdout[-400:] + approved.stderr,
                    "reset_rc": reset.returncode,
                    "reset_said": reset.stdout + reset.stderr[-2000:],
                    "byte_identical": graph_digest(load()) == before,
                }
            )
        )
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


if __name__ == "__main__":
    main()
