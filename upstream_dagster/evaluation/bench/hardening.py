"""Bad input, generated: does every entry point refuse it with the problem and the fix?

Six kinds of input a person (or an attacker) hands Upstream, each mutated from a valid one by a
seeded generator (the tests drive the same generators with hypothesis):

- estate files (``load_estate``), scenario files (``load_scenario``);
- SQL for the forensic guard, run against a scratch warehouse whose tables are checksummed
  before and after (a write that got through is data lost);
- launchpad approvals (the gate, with signed identity), which must never write for a stale
  digest, a stranger, or a forged proof;
- launchpad configs of the two write-backs (Dagster's validation against the config classes the
  launchpad shows: a missing field, a wrong type, an unknown field, a token pasted in);
- environment values (the clock, the state folder, the DataHub address);
- the gate attacked (`gate_attacks`): launch-time configuration, replayed approvals, edits of
  the trust root, concurrent write-backs on PostgreSQL, failures of the machine.

Each try ends as one of: a clean error (an `UpstreamError` with a fix, or a config validation
error naming the field), accepted (the input was fine), wrongly accepted (a must-refuse input
went through), a traceback (any other exception), or data lost. The counts are printed:

    python -m upstream_dagster.evaluation.bench.hardening [--tries 200] [--seed 1]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import string
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pydantic

from upstream_dagster import clock, gate
from upstream_dagster import settings as settings_mod
from upstream_dagster.clock import ClockError
from upstream_dagster.datahub import open_graph
from upstream_dagster.errors import UpstreamError
from upstream_dagster.evaluation.bench import gate_attacks, launchpad
from upstream_dagster.evaluation.scenario import load_scenario
from upstream_dagster.settings import PROJECT_ROOT
from upstream_dagster.spec.loader import load_estate
from upstream_dagster.spec.models import Policies
from upstream_dagster.state import keys
from upstream_dagster.warehouse.duckdb_warehouse import forensic

ESTATE = (PROJECT_ROOT / "estate.yaml").read_text()
SCENARIO = (PROJECT_ROOT / "scenarios" / "vendor_drift.yaml").read_text()
OUTCOMES = ("clean error", "accepted", "wrongly accepted", "traceback", "data lost")


@dataclass(frozen=True)
class Try:
    kind: str
    what: str
    outcome: str
    detail: str = ""


def _junk(rng: random.Random, n: int = 12) -> str:
    alphabet = string.ascii_letters + string.digits + " _-.:;'\"`$\\/*%#@!\x1b\x00\u202e"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, n)))


def _unquoted(rng: random.Random) -> str:
    return "".join(c for c in _junk(rng) if c not in "'\"`*/")


def _ident(rng: random.Random) -> str:
    return rng.choice(string.ascii_lowercase) + "".join(
        rng.choice(string.ascii_lowercase + "_") for _ in range(rng.randint(2, 10))
    )


# -- estate files: (description, text or bytes) each of which must be refused -------------------
def estate_mutation(rng: random.Random) -> tuple[str, str | bytes]:
    choices: list[Callable[[], tuple[str, str | bytes]]] = [
        lambda: ("unknown top-level key", ESTATE + f"\n{_ident(rng)}: {_junk(rng)!r}\n"),
        lambda: (
            "requirement of the wrong type",
            ESTATE.replace("min_assertions: 2", f"min_assertions: {_ident(rng)}", 1),
        ),
        lambda: (
            "negative SLA",
            ESTATE.replace(
                "freshness_sla_hours: 24", f"freshness_sla_hours: -{rng.randint(1, 99)}", 1
            ),
        ),
        lambda: ("no tiers", "version: 1\npolicies:\n  actuation: dry-run\n"),
        lambda: ("policies twice", ESTATE + "\npolicies:\n  actuation: auto\n  approvers: [eve]\n"),
        lambda: (
            "control character in a name",
            ESTATE.replace("name: tier-1", 'name: "tier-1\\x1b[2J"', 1),
        ),
        lambda: (
            "empty approver",
            ESTATE.replace("approvers: [alice, platform-oncall]", "approvers: ['']", 1),
        ),
        lambda: (
            "criticality out of range",
            ESTATE.replace("criticality: 1.0", f"criticality: {rng.randint(2, 99)}", 1),
        ),
        lambda: (
            "alias bomb",
            "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
            + "".join(
                f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n"
                for p, c in zip("abcdefgh", "bcdefghi", strict=True)
            ),
        ),
        lambda: ("deep nesting", "a: " + "[" * 50_000 + "]" * 50_000 + "\n"),
        lambda: ("binary", bytes(rng.randrange(256) for _ in range(rng.randint(8, 400)))),
        lambda: (
            "latin-1",
            ("version: 1\n# caf" + "\xe9" * rng.randint(1, 5) + "\n").encode("latin-1"),
        ),
        lambda: (
            "a key for a stranger",
            ESTATE.replace(
                "  identity: not-enforced\n",
                f"  identity: signed\n  approver_keys: {{{_ident(rng)}x: {'A' * 43}=}}\n",
                1,
            ),
        ),
        lambda: ("a list where a mapping goes", f"- {_junk(rng)!r}\n- 2\n"),
    ]
    return rng.choice(choices)()


# -- scenario files ------------------------------------------------------------------------------
def scenario_mutation(rng: random.Random) -> tuple[str, str | bytes]:
    fault = "faults:\n  - kind: {kind}\n    relation: {rel}\n    column: discount_amt\n{extra}"
    bad_where = rng.choice(
        ["1=1 --", "1=1; DROP TABLE x", "(SELECT 1 FROM y) = 1", "1 /* x */", ")", "a ="]
    )
    choices: list[tuple[str, str | bytes]] = [
        ("unknown fault kind", fault.format(kind=_ident(rng), rel="vendor.discounts", extra="")),
        (
            "factor nan",
            fault.format(kind="scale_values", rel="vendor.discounts", extra="    factor: .nan\n"),
        ),
        (
            "hours 1e30",
            fault.format(kind="stale", rel="vendor.discounts", extra="    hours: 1e30\n"),
        ),
        (
            "a where that is not one condition",
            fault.format(
                kind="null_column", rel="vendor.discounts", extra=f"    where: {bad_where!r}\n"
            ),
        ),
        (
            "injection through a type",
            fault.format(
                kind="change_type",
                rel="vendor.discounts",
                extra=f"    to: \"VARCHAR; COPY (SELECT 'x') TO '/tmp/{_ident(rng)}.csv'\"\n",
            ),
        ),
        (
            "a relation with a quote",
            fault.format(kind="null_column", rel=f"vendor.x'{_ident(rng)}", extra=""),
        ),
        ("binary", bytes(rng.randrange(256) for _ in range(rng.randint(8, 300)))),
        (
            "rename to an expression",
            fault.format(
                kind="rename_column",
                rel="vendor.discounts",
                extra="    to: 'a) ; DROP TABLE t; --'\n",
            ),
        ),
        ("nothing to do", "description: nothing\n"),
        ("not a mapping", "- 1\n- 2\n"),
    ]
    return rng.choice(choices)


# -- SQL for the forensic guard: each must be refused, and nothing may change ---------------------
def sql_mutation(rng: random.Random) -> tuple[str, str]:
    table = "s.t"
    choices = [
        f"DELETE FROM {table}",
        f"WITH x AS (DELETE FROM {table} RETURNING *) SELECT * FROM x",
        f"WITH x AS (UPDATE {table} SET a = 0 RETURNING *) SELECT * FROM x",
        f"SELECT * FROM {table}; DROP TABLE {table}",
        f"COPY (SELECT * FROM {table}) TO '/tmp/{_ident(rng)}.csv'",
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM '/etc/passwd'",
        f"SELECT getenv('HOME') FROM {table}",
        f"ATTACH '/tmp/{_ident(rng)}.db' AS x",
        "INSTALL httpfs",
        f"SELECT * FROM {_ident(rng)}.{_ident(rng)}",
        f"SELECT '{_unquoted(rng)} FROM {table}",  # an unclosed quote
        f"SELECT a FROM {table} /* {_unquoted(rng)}",  # an unclosed comment
        f"PRAGMA {_ident(rng)}",
        f"CREATE TABLE {_ident(rng)} AS SELECT * FROM {table}",
        f"SELECT * FROM {table} WHERE a IN (SELECT a FROM {_ident(rng)}.x)",
    ]
    sql = rng.choice(choices)
    return sql, sql


# -- launchpad approvals through the gate --------------------------------------------------------
def approval_mutation(rng: random.Random) -> tuple[str, gate.Request]:
    stranger = rng.choice(["mallory", "", " alice", "alice\n", "ALICE", _junk(rng)])
    forged = rng.choice(["", "A" * 88, _junk(rng, 90), "x"])
    choices = [
        ("a stale digest", gate.Request(_ident(rng), "alice", proof=forged)),
        ("a stranger", gate.Request("d1", stranger, proof=forged)),
        ("a forged proof", gate.Request("d1", "alice", proof=forged)),
        ("a claim to be automatic", gate.Request("d1", "alice", automatic=True, proof=forged)),
    ]
    return rng.choice(choices)


# -- environment values --------------------------------------------------------------------------
def env_mutation(rng: random.Random, scratch: Path) -> tuple[str, dict[str, str]]:
    file = scratch / "not-a-folder"
    file.write_text("x")
    choices = [
        # after a character no instant starts with: junk of blanks alone means "unset", and
        # eight digits are an ISO date (20261204), both rightly accepted
        (
            "a clock that is not an instant",
            {"UPSTREAM_CLOCK": "@" + _junk(rng).replace("\x00", "")},
        ),
        ("a state folder that is a file", {"UPSTREAM_STATE_DIR": str(file)}),
        (
            "a DataHub address that is not a URL",
            {"DATAHUB_GMS_URL": _junk(rng).replace("\x00", "")},
        ),
        ("a DataHub nobody answers", {"DATAHUB_GMS_URL": f"http://127.0.0.1:9/{_ident(rng)}"}),
        ("an estate file that is a folder", {"UPSTREAM_ESTATE": str(scratch)}),
    ]
    return rng.choice(choices)


@contextmanager
def _env(values: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _outcome(step: Callable[[], object], must_refuse: bool) -> tuple[str, str]:
    try:
        step()
    except UpstreamError as exc:
        return ("clean error", exc.problem) if exc.fix else ("traceback", str(exc))
    except (pydantic.ValidationError, ClockError) as exc:  # named field, or the clock's own
        return "clean error", str(exc).splitlines()[0]
    except Exception as exc:  # noqa: BLE001 - what this bench exists to find
        return "traceback", f"{type(exc).__name__}: {str(exc)[:200]}"
    return ("wrongly accepted", "") if must_refuse else ("accepted", "")


def _checksum(path: Path) -> str:
    con = duckdb.connect(str(path), read_only=True)
    try:
        rows = con.execute("SELECT * FROM s.t ORDER BY a").fetchall()
        tables = con.execute(
            "SELECT table_schema, table_name FROM information_schema.tables"
        ).fetchall()
    finally:
        con.close()
    return hashlib.sha256(repr((rows, sorted(tables))).encode()).hexdigest()


KINDS = ("estate", "scenario", "sql", "approval", "launchpad", "env") + gate_attacks.KINDS


@contextmanager
def scratch() -> Iterator[tuple[Path, Path, str]]:
    """A throwaway folder with a small warehouse: (folder, warehouse, its checksum)."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        warehouse = folder / "w.duckdb"
        con = duckdb.connect(str(warehouse))
        con.execute("CREATE SCHEMA s; CREATE TABLE s.t AS SELECT range AS a FROM range(1000)")
        con.close()
        yield folder, warehouse, _checksum(warehouse)


def run(tries: int, seed: int, gate_url: str = "") -> list[Try]:
    rng = random.Random(seed)
    policies = signed_policies()
    with scratch() as (folder, warehouse, before):
        return [
            one(KINDS[i % len(KINDS)], rng, folder, warehouse, before, policies, gate_url)
            for i in range(tries)
        ]


def signed_policies() -> Policies:
    with tempfile.TemporaryDirectory() as tmp:
        public = keys.generate(Path(tmp) / "alice.key")
    return Policies(actuation="ratify", approvers=["alice"], approver_keys={"alice": public})


def one(
    kind: str,
    rng: random.Random,
    scratch: Path,
    warehouse: Path,
    before: str,
    policies: Policies,
    gate_url: str = "",
) -> Try:
    """One generated bad input of ``kind``, tried."""
    if kind in gate_attacks.KINDS:
        what, (outcome, detail) = gate_attacks.one(kind, rng, scratch, gate_url)
        return Try(kind, what, outcome, detail)
    if kind in ("estate", "scenario"):
        what, content = (estate_mutation if kind == "estate" else scenario_mutation)(rng)
        path = scratch / f"{kind}-{rng.randrange(10**9)}.yaml"
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        loader = load_estate if kind == "estate" else load_scenario
        outcome, detail = _outcome(lambda: loader(path), must_refuse=True)
        return Try(kind, what, outcome, detail)
    if kind == "sql":
        what, sql = sql_mutation(rng)
        ran, _, why = forensic(warehouse, sql, {"s.t"})
        outcome = "wrongly accepted" if ran is not None and not why else "clean error"
        if _checksum(warehouse) != before:
            outcome = "data lost"
        return Try(kind, what, outcome, why)
    if kind == "approval":
        what, request = approval_mutation(rng)
        subject = gate.Subject("batch", "d1", "d1", (("p-1", 0.5),))
        decision = gate.decide(policies, request, subject)
        clean = decision.verdict == "refuse" and bool(decision.problem and decision.fix)
        return Try(kind, what, "clean error" if clean else "wrongly accepted", decision.problem)
    if kind == "launchpad":
        what, step, run_config = launchpad.mutation(rng)
        why = launchpad.refused(step, run_config)
        return Try(kind, what, "clean error" if why else "wrongly accepted", why)
    what, values = env_mutation(rng, scratch)
    return Try("env", what, *_outcome(lambda: _open_with(values), must_refuse=True))


def _open_with(values: dict[str, str]) -> None:
    with _env(values):
        settings = settings_mod.load()
        clock.now()
        load_estate(settings.estate_file)
        open_graph(settings).close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with gate_attacks.deployment_store() as (gate_url, where):
        print(f"concurrent write-backs on {where}")
        tries = run(args.tries, args.seed, gate_url)
    counts = Counter(t.outcome for t in tries)
    print(f"tried {len(tries)}: " + ", ".join(f"{o} {counts.get(o, 0)}" for o in OUTCOMES))
    by_kind = Counter((t.kind, t.outcome) for t in tries)
    for kind in KINDS:
        row = ", ".join(
            f"{o} {by_kind.get((kind, o), 0)}" for o in OUTCOMES if by_kind.get((kind, o))
        )
        print(f"  {kind:<9} {row}")
    for t in tries:
        if t.outcome in ("wrongly accepted", "traceback", "data lost"):
            print(f"  {t.outcome}: {t.kind} / {t.what}: {t.detail}")
    if counts.get("wrongly accepted") or counts.get("traceback") or counts.get("data lost"):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
