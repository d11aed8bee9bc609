"""Record real exchanges from a live DataHub GMS into the fixture format the `gms` tests replay.

    DATAHUB_GMS_URL=http://gms:8080 DATAHUB_GMS_TOKEN=... \\
        python -m upstream_dagster.evaluation.capture --out tests/captured/gms_exchanges.json
    UPSTREAM_GMS_EXCHANGES=tests/captured/gms_exchanges.json make test-fast

Each scene makes the calls its test makes, on the same URNs, and every HTTP exchange is kept:
method, path, query, the GraphQL operation and variables, the status and the answer. Before a
scene, the aspects its batchGet reads are written to the server as the modelled fixture holds
them (not recorded), so what the server answers is comparable. Scenes whose data cannot be
seeded that way (a timeline, run events, incidents) record what the server holds; their tests
may then disagree on values while the shapes are the server's own. Writes go to the fixtures'
scratch URNs (the `acme` datasets), never to anything else.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from upstream_dagster.conformance.proposals import Change
from upstream_dagster.datahub import aspects, changes
from upstream_dagster.datahub.gms import GmsGraph
from upstream_dagster.datahub.gms.recorder import Recorder, recording
from upstream_dagster.datahub.model import Json, SearchQuery
from upstream_dagster.datahub.probe import read_history, schema_changes
from upstream_dagster.errors import UpstreamError

LEDGER = "urn:li:dataset:(urn:li:dataPlatform:dbt,acme.marts.fct_ledger,PROD)"
STG = "urn:li:dataset:(urn:li:dataPlatform:dbt,acme.staging.stg_ledger,PROD)"
RAW = "urn:li:dataset:(urn:li:dataPlatform:duckdb,acme.raw.rebates,PROD)"
RAW_DBT = "urn:li:dataset:(urn:li:dataPlatform:dbt,acme.raw.rebates,PROD)"
GUARD = "urn:li:assertion:upstream-guard-00aa11bb22cc33dd"
KEY = "urn:li:incident:upstream-0123456789abcdef0123"
RAISED, RESOLVED = "NULLs in rebate_amt", "check passes after the fix"


# What the scenes write: the same values the modelled fixtures expect (the tests use them too).
def incident_info(kind: str, state: str, stage: str, message: str, **extra: Any) -> Json:
    return {
        "type": kind,
        "title": extra.pop("title", "not_null_fct_ledger_amount failed: NULLs in rebate_amt"),
        "description": extra.pop("description", "## What failed\nNULLs in rebate_amt [E1]"),
        "entities": [LEDGER],
        "priority": extra.pop("priority", 0),
        "assignees": extra.pop("assignees", [{"actor": "urn:li:corpuser:ana"}]),
        "status": {"state": state, "stage": stage, "message": message},
        "startedAt": 1795990000000,
        **extra,
    }


def guard_info() -> Json:
    return aspects.guard_assertion("not_null", RAW, "rebate_amt")


def run_event() -> Json:
    return {
        "timestampMillis": 1795990600000,
        "runId": "r9",
        "asserteeUrn": RAW,
        "assertionUrn": GUARD,
        "status": "COMPLETE",
        "result": {
            "type": "FAILURE",
            "nativeResults": {"message": "412 NULLs", "column": "rebate_amt"},
        },
    }


def _apply(kind: str, urn: str, *values: str) -> Callable[[GmsGraph], object]:
    return lambda g: changes.apply(g, urn, Change(kind, values))  # type: ignore[arg-type]


# fixture name -> the calls its test makes
SCENES: dict[str, Callable[[GmsGraph], object]] = {
    "search_paged": lambda g: g.search(
        SearchQuery(platforms=("dbt",), domains=("urn:li:domain:finance",), names=("fct_*",))
    ),
    "batch_get": lambda g: g.get_aspects([LEDGER, STG], ["ownership", "upstreamLineage"]),
    "downstream_lineage": lambda g: g.lineage([STG], "downstream"),
    "timeline": lambda g: g.timeline(RAW_DBT, ["TECHNICAL_SCHEMA"], start_ms=1000),
    "timeline_ownership": lambda g: g.timeline(LEDGER, ["OWNERSHIP"]),
    "assertion_runs": lambda g: g.assertion_runs(),
    "write_readback": lambda g: g.write_aspect(
        LEDGER, "globalTags", {"tags": [{"tag": "urn:li:tag:pii"}]}
    ),
    "patch_owner": _apply("add_owner", LEDGER, "urn:li:corpuser:bo"),
    "raise_incident": lambda g: g.write_aspect(
        KEY,
        "incidentInfo",
        incident_info("FIELD", "ACTIVE", "INVESTIGATION", "NULLs in rebate_amt"),
    ),
    "resolve_incident": lambda g: g.write_aspect(
        KEY,
        "incidentInfo",
        incident_info("FIELD", "RESOLVED", "FIXED", "check passes after the fix"),
    ),
    "custom_assertion": lambda g: g.write_aspect(GUARD, "assertionInfo", guard_info()),
    "assertion_result": lambda g: g.write_aspect(GUARD, "assertionRunEvent", run_event()),
    "structured_patch": _apply(
        "set_structured_property", RAW, "urn:li:structuredProperty:fragilityScore", "0.40"
    ),
    "memory_patch": _apply(
        "add_memory",
        RAW,
        "https://upstream.invalid/runbooks/rename/k1",
        "Runbook (rename of rebate_amt): check this feed first.",
    ),
    "field_tag_patch": _apply(
        "add_column_tag", RAW, "rebate_amt", "urn:li:tag:upstream-root-cause"
    ),
    "aspect_history": lambda g: g.aspect_history(LEDGER, "ownership"),
    "node_history": lambda g: schema_changes(g, RAW_DBT, read_history(g, RAW_DBT)),
}


def _seed(graph: GmsGraph, modelled: list[Json]) -> None:
    """Write the aspects a scene's first batchGet reads, as the modelled answer holds them."""
    for ex in modelled:
        if ex["path"].endswith("/batchGet") and isinstance(ex["response"], list):
            for entity in ex["response"]:
                for aspect, item in entity.items():
                    if aspect != "urn" and isinstance(item, dict) and "value" in item:
                        graph.write_aspect(entity["urn"], aspect, item["value"])
            return


def capture(graph_factory: Callable[[], GmsGraph], recorder: Recorder, modelled: Json) -> Json:
    """Every scene, recorded; ``graph_factory`` connects (its /config becomes `connect`)."""
    out: Json = {}
    recorder.recording = True
    graph = graph_factory()
    server = graph.server
    out["connect"] = {"_about": f"captured from {server}", "exchanges": recorder.exchanges[:]}
    for name, scene in SCENES.items():
        recorder.recording = False
        _seed(graph, (modelled.get(name) or {}).get("exchanges", []))
        recorder.exchanges.clear()
        recorder.recording = True
        scene(graph)
        out[name] = {
            "_about": f"captured from {server} by `python -m upstream_dagster.evaluation.capture`",
            "exchanges": recorder.exchanges[:],
        }
    recorder.exchanges.clear()
    return out


def main(argv: list[str] | None = None) -> int:
    import os

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--modelled",
        type=Path,
        default=Path(__file__).resolve().parents[2] / "tests/modelled/gms_exchanges.json",
    )
    args = parser.parse_args(argv)
    url = os.environ.get("DATAHUB_GMS_URL")
    if not url:
        raise SystemExit("set DATAHUB_GMS_URL (and DATAHUB_GMS_TOKEN) to the GMS to capture from")
    token = os.environ.get("DATAHUB_GMS_TOKEN")
    try:
        modelled = json.loads(args.modelled.read_text())
        with recording(url, secrets=(token or "",)) as recorder:
            found = capture(lambda: GmsGraph(url, token), recorder, modelled)
    except UpstreamError as exc:
        raise SystemExit(f"error: {exc.problem}\n  fix: {exc.fix}") from None
    found["_about"] = (
        f"HTTP exchanges captured from a live DataHub GMS on {time.strftime('%Y-%m-%d')} by "
        "`python -m upstream_dagster.evaluation.capture`, in the modelled fixtures' format."
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(found, indent=1) + "\n")
    total = sum(len(v["exchanges"]) for k, v in found.items() if k != "_about")
    print(f"{len(found) - 1} fixtures, {total} exchanges -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
