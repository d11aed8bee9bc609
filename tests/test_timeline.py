"""The timeline derived from DataHub Lite's aspect versions follows DataHub's rename rules."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from upstream_dagster.datahub import timeline
from upstream_dagster.datahub.lite import LiteGraph
from upstream_dagster.datahub.model import AspectVersion

URN = "urn:li:dataset:(urn:li:dataPlatform:dbt,acme.vendor.rebates,PROD)"


def schema(*fields: tuple[str, str, str], stamp: int = 0) -> dict[str, Any]:
    return {
        "schemaName": "rebates",
        "platform": "urn:li:dataPlatform:dbt",
        "version": 0,
        "created": {"time": stamp, "actor": "urn:li:corpuser:x"},
        "lastModified": {"time": stamp, "actor": "urn:li:corpuser:x"},
        "hash": "",
        "platformSchema": {"com.linkedin.schema.MySqlDDL": {"tableSchema": ""}},
        "fields": [
            {
                "fieldPath": path,
                "nullable": True,
                "description": desc or None,
                "type": {"type": {"com.linkedin.schema.NumberType": {}}},
                "nativeDataType": native,
            }
            for path, native, desc in fields
        ],
    }


@pytest.fixture
def lite(tmp_path: Path) -> LiteGraph:
    graph = LiteGraph(tmp_path / "lite.sqlite", create=True)
    yield graph
    graph.close()


def write_versions(lite: LiteGraph, *versions: dict[str, Any]) -> None:
    for value in versions:
        assert lite.write_aspect(URN, "schemaMetadata", value).written
        time.sleep(0.005)  # Lite stamps each version with the current millisecond


def schema_events(lite: LiteGraph) -> list[list[tuple[str, str]]]:
    return [
        [(e.operation, e.parameters["fieldPath"]) for e in t.events]
        for t in lite.timeline(URN, ["TECHNICAL_SCHEMA"])
    ]


def test_rename_with_same_type_parent_and_description_is_one_modify(lite: LiteGraph) -> None:
    write_versions(
        lite,
        schema(("rebate_amt", "DECIMAL(10,2)", "Rebate in EUR.")),
        schema(("rebate_amount", "DECIMAL(10,2)", "Rebate in EUR.")),
    )
    transactions = lite.timeline(URN, ["TECHNICAL_SCHEMA"])
    last = transactions[-1].events
    assert [
        (e.operation, e.parameters["fieldPath"], e.parameters.get("oldFieldPath")) for e in last
    ] == [("MODIFY", "rebate_amount", "rebate_amt")]
    assert transactions[-1].sem_ver_change == "MAJOR"


def test_rename_losing_its_description_is_remove_plus_add_in_one_transaction(
    lite: LiteGraph,
) -> None:
    write_versions(
        lite,
        schema(("rebate_amt", "DECIMAL(10,2)", "Rebate in EUR.")),
        schema(("rebate_amount", "DECIMAL(10,2)", "")),
    )
    assert schema_events(lite)[-1] == [("REMOVE", "rebate_amt"), ("ADD", "rebate_amount")]


def test_blank_description_on_both_sides_is_not_a_rename(lite: LiteGraph) -> None:
    write_versions(lite, schema(("a", "INTEGER", "")), schema(("b", "INTEGER", "")))
    assert schema_events(lite)[-1] == [("REMOVE", "a"), ("ADD", "b")]


def test_rename_with_a_type_change_is_remove_plus_add(lite: LiteGraph) -> None:
    write_versions(lite, schema(("a", "INTEGER", "Count.")), schema(("b", "BIGINT", "Count.")))
    assert schema_events(lite)[-1] == [("REMOVE", "a"), ("ADD", "b")]


def test_type_change_is_a_modify(lite: LiteGraph) -> None:
    write_versions(lite, schema(("a", "INTEGER", "Count.")), schema(("a", "BIGINT", "Count.")))
    event = lite.timeline(URN, ["TECHNICAL_SCHEMA"])[-1].events[0]
    assert (
        event.operation,
        event.parameters["oldNativeType"],
        event.parameters["newNativeType"],
    ) == ("MODIFY", "INTEGER", "BIGINT")


def test_audit_stamps_alone_are_not_a_change(lite: LiteGraph) -> None:
    write_versions(
        lite,
        schema(("a", "INTEGER", "Count."), stamp=1),
        schema(("a", "INTEGER", "Count."), stamp=2),
    )
    assert len(lite.aspect_history(URN, "schemaMetadata")) == 2  # Lite did store a new version
    assert len(lite.timeline(URN, ["TECHNICAL_SCHEMA", "DOCUMENTATION"])) == 1  # creation only


def test_ownership_tags_terms_and_docs_changes_are_categorised() -> None:
    def v(n: int, value: dict[str, Any]) -> AspectVersion:
        return AspectVersion(n, n * 1000, value)

    history = {
        "ownership": [
            v(1, {"owners": []}),
            v(2, {"owners": [{"owner": "urn:li:corpuser:ana", "type": "DATAOWNER"}]}),
        ],
        "globalTags": [v(1, {"tags": [{"tag": "urn:li:tag:pii"}]}), v(2, {"tags": []})],
        "glossaryTerms": [v(2, {"terms": [{"urn": "urn:li:glossaryTerm:Revenue"}]})],
        "datasetProperties": [v(1, {"description": ""}), v(2, {"description": "Daily revenue."})],
    }
    txs = timeline.derive(URN, history)
    got = sorted((e.category, e.operation, e.modifier) for e in txs[-1].events)
    assert got == [
        ("DOCUMENTATION", "ADD", URN),
        ("GLOSSARY_TERM", "ADD", "urn:li:glossaryTerm:Revenue"),
        ("OWNERSHIP", "ADD", "urn:li:corpuser:ana"),  # DataHub's name since 1.6
        ("TAG", "REMOVE", "urn:li:tag:pii"),
    ]
    assert [t.timestamp_ms for t in timeline.derive(URN, history, start_ms=1500)] == [2000]


def test_unknown_category_is_refused_with_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="TECHNICAL_SCHEMA"):
        timeline.derive(URN, {}, ["SCHEMA"])


def test_structured_property_and_memory_writers_keep_everyone_elses_values(lite: LiteGraph) -> None:
    from upstream_dagster.conformance.proposals import Change
    from upstream_dagster.datahub.changes import apply as write_change
    from upstream_dagster.datahub.changes import restore

    owned = {
        "properties": [
            {"propertyUrn": "urn:li:structuredProperty:costCenter", "values": [{"string": "cc-1"}]}
        ]
    }
    assert lite.write_aspect(URN, "structuredProperties", owned).written
    change = Change("set_structured_property", ("urn:li:structuredProperty:retentionDays", "30"))
    ((receipt, before),) = write_change(lite, URN, change)
    assert receipt.written and before.value == owned
    props = lite.get_aspects([URN], ["structuredProperties"])[URN]["structuredProperties"]
    assert [p["propertyUrn"].rsplit(":", 1)[-1] for p in props["properties"]] == [
        "costCenter",
        "retentionDays",
    ]
    ((memo, absent),) = write_change(
        lite,
        URN,
        Change("add_memory", ("https://runbooks.example/rebates", "Runbook: rebates feed")),
    )
    assert memo.written and absent.value is None
    restore(lite, absent)
    restore(lite, before)
    assert lite.get_aspects([URN], ["structuredProperties", "institutionalMemory"])[URN] == {
        "structuredProperties": owned
    }
