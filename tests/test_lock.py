"""The lock: `make install` installs requirements.lock, never a fresh resolve, so the lock must
say what pyproject.toml asks for. A dependency added, removed or re-pinned in pyproject.toml
without `make lock` fails here, before two machines can install different things."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
PINNED = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)")


def _locked(path: Path) -> dict[str, tuple[str, set[str], int]]:
    """name -> (version, what it is locked for, how many hashes)."""
    out: dict[str, tuple[str, set[str], int]] = {}
    name = ""
    for line in path.read_text().splitlines():
        found = PINNED.match(line)
        if found:
            name = canonicalize_name(found[1])
            out[name] = (found[2], set(), 0)
        elif name and "--hash=sha256:" in line:
            version, via, hashes = out[name]
            out[name] = (version, via, hashes + 1)
        elif name and line.strip().startswith("#"):
            out[name][1].add(line.strip("# ").removeprefix("via").strip())
    return out


def _declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project.get("optional-dependencies", {}).values()
    return [Requirement(r) for r in [*project["dependencies"], *(r for e in extras for r in e)]]


def test_the_lock_holds_exactly_what_pyproject_asks_for() -> None:
    locked = _locked(ROOT / "requirements.lock")
    declared = _declared()
    direct = {n for n, (_, via, _) in locked.items() if "upstream-dagster (pyproject.toml)" in via}
    names = {canonicalize_name(r.name) for r in declared}
    assert names - direct == set(), "in pyproject.toml, not locked for it: run `make lock`"
    assert direct - names == set(), "locked for pyproject.toml, no longer in it: `make lock`"
    for req in declared:
        version = locked[canonicalize_name(req.name)][0]
        assert req.specifier.contains(version, prereleases=True), (
            f"pyproject.toml asks for {req}, the lock has {version}: run `make lock`"
        )


def test_every_locked_package_is_pinned_with_its_hashes() -> None:
    locked = _locked(ROOT / "requirements.lock")
    assert len(locked) > 100  # the whole tree, not only the direct dependencies
    assert [n for n, (_, _, hashes) in locked.items() if hashes == 0] == []
    (uv,) = _locked(ROOT / "requirements-uv.lock").items()
    assert uv[0] == "uv" and uv[1][2] > 0


def test_make_install_installs_the_lock_and_never_resolves() -> None:
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("$(STAMP):", 1)[1].split("\n\n", 1)[0]
    assert "requirements.lock" in recipe.splitlines()[0]  # a new lock reinstalls
    assert "pip sync" in recipe and "--require-hashes" in recipe
    assert "--no-deps --editable ." in recipe  # the project itself adds nothing unlocked
    assert "pip install --quiet --disable-pip-version-check" not in makefile


def test_a_clone_tracks_no_link_into_another_checkout() -> None:
    """A symlink in git (a worktree's `.uv -> /work/main/.uv` once was) makes a fresh clone's
    `make` follow it into a folder that is not there, or loop: nothing tracked is a link."""
    import subprocess

    listed = subprocess.run(
        ["git", "ls-files", "-s"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    links = [line.split("\t", 1)[1] for line in listed.splitlines() if line.startswith("120000")]
    assert links == [], f"tracked symlinks: {links}; `git rm --cached` them"


def test_sql_for_duckdb_is_written_without_parsing_anything(monkeypatch) -> None:
    """Every ingestion's column-level lineage and every forensic query write DuckDB SQL through
    sqlglot. The compiled sqlglot 30.11-30.16 (what acryl-datahub pins) parsed about 17 SQL
    templates each time it made a DuckDB generator: two thirds of a dbt ingestion's CPU. The
    lock overrides it ([tool.uv] in pyproject.toml); this fails if it goes back."""
    import sqlglot
    from sqlglot.dialects.dialect import Dialect

    duckdb = Dialect.get_or_raise("duckdb")
    duckdb.generator()  # anything made once per process is not the cost
    parsed: list[str] = []
    real = Dialect.parse

    def counting(self: Dialect, sql: str, **opts: object) -> object:
        parsed.append(sql)
        return real(self, sql, **opts)  # type: ignore[arg-type]

    monkeypatch.setattr(Dialect, "parse", counting)
    tree = sqlglot.parse_one("SELECT a, SUM(b) AS s FROM t GROUP BY a", dialect="duckdb")
    parsed.clear()
    for _ in range(3):
        assert tree.sql(dialect="duckdb") == "SELECT a, SUM(b) AS s FROM t GROUP BY a"
    assert parsed == [], f"writing DuckDB SQL parsed {len(parsed)} templates: {parsed[:1]}"
