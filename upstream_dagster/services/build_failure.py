"""A failed build, told as dbt's error with the fix that fits what failed: a model's SQL, a
seed whose table no longer matches its CSV, or a raw feed nobody loaded."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from upstream_dagster.errors import BuildFailed

MISSING_TABLE = re.compile(r"Table with name (\S+?) does not exist", re.IGNORECASE)


def errors(results_file: Path, status: str = "error") -> list[tuple[str, str]]:
    """(unique id, dbt's message) of each node dbt could not run (tests aside): from
    run_results.json, or from sources.json with ``status`` "runtime error" (a freshness dbt
    could not measure)."""
    if not results_file.exists():
        return [("", f"dbt wrote no {results_file.name}")] if status == "error" else []
    results = json.loads(results_file.read_text())["results"]
    return [
        (str(r["unique_id"]), (r.get("message") or "").strip()[:300])
        for r in results
        if r["status"] == status and not r["unique_id"].startswith(("test.", "unit_test."))
    ]


def _missing_feeds(failed: list[tuple[str, str]], manifest: dict[str, Any]) -> list[str]:
    """The raw feeds (dbt sources) a failed model read and the warehouse does not have."""
    by_name: dict[str, str] = {}
    for s in manifest.get("sources", {}).values():
        name = str(s.get("identifier") or s["name"])
        by_name[name.lower()] = by_name[f"{s['schema']}.{name}".lower()] = f"{s['schema']}.{name}"
    found = {m.strip("\"'").lower() for _, msg in failed for m in MISSING_TABLE.findall(msg)}
    return sorted({by_name[f] for f in found if f in by_name})


def fix_for(
    failed: list[tuple[str, str]],
    manifest: dict[str, Any],
    source_dir: Path,
    reshaped: list[str] | tuple[str, ...] = (),
) -> str:
    """``reshaped``: the seeds whose table has other columns than their CSV."""
    seeds = sorted({u.split(".")[-1] for u, _ in failed if u.startswith("seed.")} | set(reshaped))
    if seeds:
        return (
            f"a seed's table has other columns than its CSV (renamed or dropped in the "
            f"warehouse): reload it with `dbt seed --full-refresh --select {' '.join(seeds)}`; "
            "`upstream heal` does so for the clean project"
        )
    feeds = _missing_feeds(failed, manifest)
    if feeds:
        return (
            f"the raw feed(s) {', '.join(feeds)} are not in the warehouse: name the SQL script "
            "that loads them with UPSTREAM_FEEDS (`make bench-own ... FEEDS=feeds.sql`), or "
            "load them before the build"
        )
    return (
        "DataHub holds a failing build check on each, and the failed_builds sensor opens an "
        "incident that finds the upstream change; or fix the model SQL in "
        f"{source_dir}/models and rebuild"
    )


def check(artifacts: Path, manifest: dict[str, Any], source_dir: Path, reshaped: list[str]) -> None:
    """Raise `BuildFailed` naming dbt's errors and the fix when the build left any."""
    failed = errors(artifacts / "run_results.json")
    feeds = errors(artifacts / "sources.json", "runtime error")
    if not failed and not feeds:
        return
    what = [f"dbt could not build {len(failed)} model(s)"] if failed else []
    what += [f"could not measure the freshness of {len(feeds)} feed(s)"] if feeds else []
    if reshaped:  # a model failed on a column its seed lost: the seed is the cause
        what.append(f"the seed(s) {', '.join(reshaped)} have other columns than their CSV")
    shown = "; ".join(f"{uid}: {msg}" if uid else msg for uid, msg in (failed + feeds)[:3])
    fix = fix_for(failed, manifest, source_dir, reshaped)
    raise BuildFailed(" and ".join(what) + ": " + shown, fix)
