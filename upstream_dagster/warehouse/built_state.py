"""What the warehouse was last built from, so a refresh rebuilds only what changed since.

After each build Upstream records the deployed project's code (a digest of every node's
checksum, config and parents, and of every macro) and the data the build reads but does not
write (a fingerprint of each raw feed and seed table: its columns, rows and a hash of them),
plus the models the build left stale (failed, skipped, or not selected although changed).
A later refresh compares the project and the warehouse with that record: what differs is
rebuilt with everything downstream of it, dbt's ``<node>+`` (a changed macro counts as the
nodes that call it). No record, or a changed materialization, means a full build.

What a refresh skips is what it would have rebuilt to the same result: a node's table (and a
dbt test's verdict) is a function of its code and its parents' tables, both unchanged, unless
its code reads the clock (`reads_clock`): such a model counts as changed on every refresh,
and such a test is run again (`defs.rebuild`).
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from upstream_dagster.errors import BuildFailed
from upstream_dagster.warehouse import duckdb_warehouse as wh
from upstream_dagster.warehouse.dbt_project import DbtProject

RECORD = "built.json"
BUILT = ("model", "seed", "snapshot")  # what a dbt build writes to the warehouse
BUILT_PREFIXES = tuple(f"{kind}." for kind in BUILT)
INPUTS = ("source", "seed")  # what it reads that something else may have changed
# SQL (or a dbt context variable) whose value is the time of the run, in the dialects dbt
# adapters speak: a node that reads one can change with no change to its code or its parents.
CLOCK = re.compile(
    r"\b(current_(timestamp|date|time)|localtimestamp|localtime|run_started_at|now\s*\(|"
    r"getdate\s*\(|sysdate|systimestamp|today\s*\()",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Built:
    nodes: dict[str, str]  # unique id -> digest of its code, config and parents
    macros: dict[str, str]  # macro unique id -> digest of its SQL
    inputs: dict[str, str] = field(default_factory=dict)  # unique id -> data fingerprint
    stale: list[str] = field(default_factory=list)  # built nodes the warehouse lags behind


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def relation(props: dict[str, Any]) -> str:
    name = props.get("alias") or props.get("identifier") or props["name"]
    return f"{props['schema']}.{name}".lower()


def _all(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {**manifest["nodes"], **manifest["sources"]}


def code_digests(manifest: dict[str, Any]) -> dict[str, str]:
    out = {}
    for uid, props in _all(manifest).items():
        config = {k: v for k, v in (props.get("config") or {}).items() if k != "meta"}
        parents = (props.get("depends_on") or {}).get("nodes") or []
        code = props.get("checksum") or props.get("raw_code") or ""
        out[uid] = _digest([code, config, sorted(parents), props.get("columns") or {}])
    return out


def macro_digests(manifest: dict[str, Any]) -> dict[str, str]:
    return {k: _digest(m.get("macro_sql", "")) for k, m in (manifest.get("macros") or {}).items()}


def _macro_users(manifest: dict[str, Any], before: dict[str, str]) -> set[str] | None:
    """The nodes that call a macro changed or added since ``before`` (directly or through
    other macros), as dbt's state:modified.macros; None when a materialization changed."""
    macros = manifest.get("macros") or {}
    bad = {k for k, d in macro_digests(manifest).items() if before.get(k) != d}
    if any(macros[k].get("name", "").startswith("materialization_") for k in bad):
        return None
    calls = {k: set((m.get("depends_on") or {}).get("macros") or []) for k, m in macros.items()}
    while more := {k for k, c in calls.items() if k not in bad and c & bad}:
        bad |= more
    uses = {u: (p.get("depends_on") or {}).get("macros") or [] for u, p in _all(manifest).items()}
    return {u for u, used in uses.items() if set(used) & bad}


def source_tests(manifest: dict[str, Any], changed: Iterable[str]) -> list[str]:
    """The dbt tests that read a changed source, or only sources and the clock, as dbt's
    selection names them (``project.path.test_name``). Selecting the models below a changed
    source leaves them out (dbt picks a test through its models, and a source builds nothing),
    yet their verdict may change: a full build runs them first."""
    sources = set(manifest.get("sources") or {})
    moved = sources & set(changed)
    clocked = reads_clock(manifest)
    out = []
    for uid, props in manifest["nodes"].items():
        if props["resource_type"] != "test":
            continue
        parents = set((props.get("depends_on") or {}).get("nodes") or [])
        if parents & moved or (parents and parents <= sources and uid in clocked):
            out.append(".".join(props["fqn"]))
    return sorted(out)


def reads_clock(manifest: dict[str, Any]) -> set[str]:
    """The nodes (models, snapshots, tests) whose code reads the clock, directly or through
    a macro they call (dbt's own ``current_timestamp()`` included)."""
    macros = manifest.get("macros") or {}
    clocked = {k for k, m in macros.items() if CLOCK.search(str(m.get("macro_sql") or ""))}
    calls = {k: set((m.get("depends_on") or {}).get("macros") or []) for k, m in macros.items()}
    while more := {k for k, c in calls.items() if k not in clocked and c & clocked}:
        clocked |= more
    out = set()
    for uid, props in manifest["nodes"].items():
        used = set((props.get("depends_on") or {}).get("macros") or [])
        code = str(props.get("raw_code") or "")
        if props["resource_type"] != "seed" and (CLOCK.search(code) or used & clocked):
            out.add(uid)
    return out


def fingerprints(warehouse: Path, manifest: dict[str, Any]) -> dict[str, str]:
    """unique id -> fingerprint of each feed and seed table ("missing" when it is not there)."""
    inputs = {u: p for u, p in _all(manifest).items() if p["resource_type"] in INPUTS}
    if not warehouse.exists():
        return dict.fromkeys(inputs, "missing")
    out = {}
    with wh.connect(warehouse) as con:
        present = wh.relations(con)
        for uid, props in sorted(inputs.items()):
            name = relation(props)
            if name not in present:
                out[uid] = "missing"
                continue
            query = f"SELECT count(*), sum(hash(t)) FROM {wh.rel(name)} t"
            rows, total = con.execute(query).fetchone() or (0, 0)
            out[uid] = _digest([present[name], rows, str(total)])
    return out


def _builds_table(props: dict[str, Any]) -> bool:
    ephemeral = (props.get("config") or {}).get("materialized") == "ephemeral"
    return props["resource_type"] in BUILT and not ephemeral


def load(state_dir: Path) -> Built | None:
    path = state_dir / RECORD
    if not path.exists():
        return None
    try:
        return Built(**json.loads(path.read_text()))
    except (ValueError, TypeError):
        return None  # a record from another version: rebuild everything, then record anew


def downstream(manifest: dict[str, Any], start: Iterable[str]) -> set[str]:
    """``start`` and every node built from it (tests aside), as dbt's ``<node>+`` selects."""
    children = manifest.get("child_map") or {}
    seen: set[str] = set()
    todo = list(start)
    while todo:
        uid = todo.pop()
        if uid in seen:
            continue
        seen.add(uid)
        # models, seeds and snapshots: a test, an exposure or a metric builds no table
        todo += [c for c in children.get(uid, []) if c.startswith(BUILT_PREFIXES)]
    return seen


def changed(project: DbtProject, built: Built | None) -> set[str] | None:
    """The nodes whose code or data differ from the last build (``None``: rebuild everything,
    for there is no record or a materialization changed). A changed test counts as its
    parents; a changed or added macro, as the nodes that call it."""
    manifest = project.manifest()
    if built is None or not isinstance(built.macros, dict):
        return None
    out = _macro_users(manifest, built.macros)
    if out is None:
        return None
    out |= {u for u, d in code_digests(manifest).items() if built.nodes.get(u) != d}
    data = fingerprints(project.warehouse, manifest)
    out |= {u for u, f in data.items() if built.inputs.get(u) != f}
    everything = _all(manifest)
    out |= set(built.stale) & set(everything)
    with wh.connect(project.warehouse) as con:
        present = set(wh.relations(con))
    out |= {u for u, p in everything.items() if _builds_table(p) and relation(p) not in present}
    out |= {u for u in reads_clock(manifest) if not u.startswith(("test.", "unit_test."))}
    for uid in [u for u in out if u.startswith(("test.", "unit_test."))]:
        out.discard(uid)
        out |= set((everything.get(uid, {}).get("depends_on") or {}).get("nodes") or [])
    return {u for u in out if u in everything}


def dbt_select(manifest: dict[str, Any], nodes: Iterable[str]) -> str:
    """The nodes as dbt's selection syntax, each with what is downstream: ``name+``."""
    everything = _all(manifest)
    out = []
    for uid in sorted(nodes):
        props = everything[uid]
        if props["resource_type"] == "source":
            out.append(f"source:{props['source_name']}.{props['name']}+")
        else:
            out.append(f"{props['name']}+")
    return " ".join(out)


def record(
    project: DbtProject, state_dir: Path, run_results: Path, intended: set[str] | None
) -> Built:
    """Record the build that just ran (``run_results``: what dbt did); ``intended`` is what
    it was to rebuild with all downstream of it (None: everything)."""
    manifest = project.manifest()
    before = load(state_dir)
    everything = _all(manifest)
    wanted = set(everything) if intended is None else downstream(manifest, intended)
    wanted = {u for u in wanted if u.startswith(BUILT_PREFIXES)}
    results = json.loads(run_results.read_text())["results"] if run_results.exists() else []
    done = {r["unique_id"] for r in results if r.get("status") == "success"}
    stale = ((set(before.stale) if before else set()) | wanted) - done
    if intended is None or before is None:
        stale = wanted - done
    built = Built(
        code_digests(manifest),
        macro_digests(manifest),
        fingerprints(project.warehouse, manifest),
        sorted(stale & set(everything)),
    )
    (state_dir / RECORD).write_text(json.dumps(asdict(built), indent=1))
    return built


def seeds_out_of_shape(project: DbtProject) -> list[str]:
    """The seeds whose table's columns are not their CSV's header (a column renamed or dropped
    in the table): reloading such a seed into the table it finds fails."""
    manifest = project.manifest()
    seeds = [p for p in manifest["nodes"].values() if p["resource_type"] == "seed"]
    if not seeds or not project.warehouse.exists():
        return []
    with wh.connect(project.warehouse) as con:
        present = wh.relations(con)
    out = []
    for props in seeds:
        table = present.get(relation(props))
        if table is None:
            continue
        with (project.project_dir / str(props["original_file_path"])).open(newline="") as f:
            header = next(csv.reader(f), [])
        if [c.lower() for c, _ in table] != [h.strip().lower() for h in header]:
            out.append(str(props["name"]))
    return sorted(out)


def full_refresh_seeds(project: DbtProject, seeds: list[str]) -> None:
    """`dbt seed --full-refresh --select SEED...`: drop and reload each from its CSV."""
    if not seeds:
        return
    done = project.run("seed", "--full-refresh", "--quiet", "--select", *seeds)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip().splitlines()[-6:]
        raise BuildFailed(
            f"dbt could not reload the seed(s) {', '.join(seeds)}:\n    " + "\n    ".join(tail),
            f"run `dbt seed --full-refresh --select {' '.join(seeds)}` in {project.project_dir}",
        )
