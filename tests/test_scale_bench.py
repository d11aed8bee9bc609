"""The scale benches at small sizes: the fast estate writer makes what DataHub Lite's own
write makes, the generators are deterministic, and each bench's printed figures come from one
run of its own logic (real DataHub Lite files, the real read path and investigation)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from upstream_dagster.datahub.lite import LiteGraph
from upstream_dagster.datahub.lite_bulk import fast_load
from upstream_dagster.datahub.readpath import read_context
from upstream_dagster.datahub.schema_slim import slim_schema
from upstream_dagster.evaluation.bench import investigation
from upstream_dagster.evaluation.bench.estate_gen import generate, records

NOW_MS = 1_795_000_000_000


def _tables(path: Path) -> tuple[list[Any], list[Any]]:
    """Both Lite tables, sorted, with the write-time stamps (a wall clock) taken out."""
    con = sqlite3.connect(str(path))
    aspects = sorted(
        (urn, name, version, metadata, json.dumps({**json.loads(system), "lastObserved": 0}))
        for urn, name, version, metadata, system, _created in con.execute(
            "SELECT * FROM metadata_aspect_v2"
        )
    )
    edges = sorted(con.execute("SELECT * FROM metadata_edge_v2"), key=repr)
    con.close()
    return aspects, edges


def test_the_fast_writer_makes_the_rows_and_edges_lites_own_write_makes(tmp_path: Path) -> None:
    slow, fast = tmp_path / "write.sqlite", tmp_path / "fast.sqlite"
    assert generate(slow, 60, seed=3, through_write=True) == generate(fast, 60, seed=3)
    slow_aspects, slow_edges = _tables(slow)
    fast_aspects, fast_edges = _tables(fast)
    assert len(slow_aspects) > 600 and len(slow_edges) > 100
    assert fast_aspects == slow_aspects
    assert fast_edges == slow_edges
    # and the read path reads the same estate back from both
    contexts = []
    for path in (slow, fast):
        graph = LiteGraph(path)
        contexts.append(read_context(graph, NOW_MS))
        graph.close()
    assert contexts[0].assets == contexts[1].assets
    assert len(contexts[0].assets) == 60


def test_the_fast_writer_refuses_what_it_cannot_write_as_lite_would(tmp_path: Path) -> None:
    twice = [
        ("urn:li:dataset:(urn:li:dataPlatform:dbt,a,PROD)", "globalTags", {"tags": []}),
        ("urn:li:dataset:(urn:li:dataPlatform:dbt,a,PROD)", "globalTags", {"tags": []}),
    ]
    with pytest.raises(ValueError, match="each \\(urn, aspect\\) once"):
        fast_load(tmp_path / "twice.sqlite", twice)


def test_the_generators_are_deterministic() -> None:
    assert list(records(40, seed=5)) == list(records(40, seed=5))
    assert list(records(40, seed=5)) != list(records(40, seed=6))
    a, b = investigation.generate(200, seed=5), investigation.generate(200, seed=5)
    assert (a.ups, a.views, a.columns, a.cause, a.symptom) == (
        b.ups,
        b.views,
        b.columns,
        b.cause,
        b.symptom,
    )
    assert investigation.generate(200, seed=6).cause != a.cause or (
        investigation.generate(200, seed=6).symptom != a.symptom
    )


def test_the_fault_is_injected_deep_upstream_of_the_symptom() -> None:
    estate = investigation.generate(200, seed=7)
    assert estate.path[0] == estate.cause and estate.path[-1] == estate.symptom
    assert len(estate.path) == 10  # ten layers: the cause is nine hops up
    assert ".l00_" in estate.cause and estate.views[estate.cause].schema
    assert estate.views[estate.symptom].failing


def test_the_investigation_bench_finds_the_injected_cause_and_reports_one_runs_reads() -> None:
    result = investigation.run(200, seed=7)
    assert result.found_cause and result.found == result.cause
    assert (result.column, result.failure_class) == ("c0", "rename")
    # every printed figure is this run's: reads per hop add up to the total
    assert result.reads == 2 + sum(reads for _, reads in result.hops)
    assert len(result.hops) >= 10  # one observe per hop, ten hops down to the fault
    assert result.walked == sum(nodes for nodes, _ in result.hops)
    lines = investigation.report(result)
    assert f"total DataHub reads {result.reads}" in lines[-2]
    assert lines[-1].startswith("  found the injected cause: YES")
    assert len(lines) == len(result.hops) + 3


def test_a_slim_schema_keeps_what_scoring_reads_and_shares_plain_fields() -> None:
    shared: dict[tuple[str, str, str], Any] = {}
    field = {"fieldPath": "id", "nativeDataType": "INT", "nullable": False, "type": {"type": {}}}
    tagged = {**field, "globalTags": {"tags": [{"tag": "urn:li:tag:pii"}]}}
    one = slim_schema({"fields": [field, tagged], "platformSchema": {"x": "DDL"}}, shared)
    two = slim_schema({"fields": [dict(field)]}, shared)
    assert one["fields"][0] == {"fieldPath": "id", "nativeDataType": "INT"}
    assert one["fields"][0] is two["fields"][0]
    assert one["fields"][1]["globalTags"] == tagged["globalTags"]
    assert set(one) == {"fields"}


def test_the_score_bench_prints_each_size_and_its_growth_from_one_run(tmp_path: Path) -> None:
    env = {"UPSTREAM_STATE_DIR": str(tmp_path), "PYTHONPATH": str(Path.cwd())}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "upstream_dagster.evaluation.bench.score",
            "--datasets",
            "30",
            "300",
            "--repeat",
            "1",
        ],
        capture_output=True,
        text=True,
        check=True,
        env={**__import__("os").environ, **env},
    ).stdout
    assert "generated 30 datasets" in out and "generated 300 datasets" in out
    rows = [line for line in out.splitlines() if " datasets  read " in line]
    assert len(rows) == 2 and all("peak RSS" in r and "1 run" in r for r in rows)
    growth = [line for line in out.splitlines() if line.startswith("t(300) / t(30)")]
    assert len(growth) == 1 and "peak RSS" in growth[0]
    assert (tmp_path / "bench" / "estate-v2-300-7.sqlite").exists()
    assert not list((tmp_path / "bench").glob("*.partial*"))
