"""Reading assertions and run records the way DataHub's sources leave them: what a person calls
an assertion, the dataset and columns it checks, when a feed last loaded, and the successful
runs of each output (dbt model runs as dataProcessInstances)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from upstream_dagster.datahub.aspects import BUILD_PROPERTY
from upstream_dagster.datahub.model import Json, SearchQuery
from upstream_dagster.datahub.protocol import MetadataGraph
from upstream_dagster.spec.urns import field_path, unquoted


def assertion_label(info: Json) -> str:
    """What a person calls an assertion: its description, else the dbt test's name."""
    unique_id = str((info.get("customProperties") or {}).get("dbt_unique_id", ""))
    if info.get("description"):
        return str(info["description"])[:160]
    if unique_id.startswith(("test.", "source.")):
        kind = "dbt test" if unique_id.startswith("test.") else "dbt source freshness"
        return f"{kind} {unique_id.split('.')[2] if unique_id.count('.') >= 2 else unique_id}"
    return str((info.get("customAssertion") or {}).get("type") or "assertion")[:160]


_DBT_TESTS = ("not_null", "unique", "relationships", "accepted_values")


def check_kind(info: Json) -> str:
    """What a check tests: "build" (a model's build), an estate.yaml monitor's rule, a dbt
    test's kind (not_null, unique, relationships, accepted_values), "freshness", or ""."""
    props = info.get("customProperties") or {}
    if props.get(BUILD_PROPERTY):
        return "build"
    if props.get("upstream_rule"):
        return str(props["upstream_rule"])
    unique_id = str(props.get("dbt_unique_id", ""))
    if unique_id.startswith("source."):
        return "freshness"
    name = unique_id.split(".")[2] if unique_id.count(".") >= 2 else ""
    return next((k for k in _DBT_TESTS if name.startswith(k + "_")), "")


def assertee(info: Json) -> str | None:
    for key in (
        "datasetAssertion",
        "freshnessAssertion",
        "volumeAssertion",
        "fieldAssertion",
        "sqlAssertion",
        "schemaAssertion",
    ):
        block = info.get(key) or {}
        entity = block.get("dataset") or block.get("entity")
        if entity:
            return str(entity)
    return None


def assertion_columns(info: Json) -> list[str]:
    """The columns an assertion checks, wherever its kind keeps them: a custom (dbt) assertion's
    ``field``, a field assertion's ``field.path``, a column-scoped dataset assertion's
    ``fields`` (Great Expectations, older dbt sources). Paths, not schemaField URNs, named as
    the schema names them (a dbt test of a quoted column keeps its quotes)."""
    found: list[str] = []
    custom = info.get("customAssertion") or {}
    if custom.get("field"):
        found.append(field_path(str(custom["field"])))
    block = info.get("fieldAssertion") or {}
    for kind in ("fieldValuesAssertion", "fieldMetricAssertion"):
        path = ((block.get(kind) or {}).get("field") or {}).get("path")
        if path:
            found.append(str(path))
    found += [field_path(str(f)) for f in (info.get("datasetAssertion") or {}).get("fields") or []]
    return list(dict.fromkeys(unquoted(c) for c in found))


def assertion_column(info: Json) -> str | None:
    """The one column an assertion checks, or None for a table-level (or multi-column) one."""
    columns = assertion_columns(info)
    return columns[0] if len(columns) == 1 else None


def loaded_ms(native: dict[str, str]) -> int | None:
    """When a feed's data last arrived, as dbt's freshness check measured it."""
    value = native.get("max_loaded_at")
    if not value:
        return None
    try:
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return int(stamp.timestamp() * 1000)


def process_runs(graph: MetadataGraph) -> Iterable[tuple[str, int]]:
    urns = graph.search(SearchQuery(entity_type="dataProcessInstance"))
    found = graph.get_aspects(urns, ["dataProcessInstanceOutput", "dataProcessInstanceRunEvent"])
    for aspects in found.values():
        event = aspects.get("dataProcessInstanceRunEvent") or {}
        if (event.get("result") or {}).get("type") != "SUCCESS":
            continue
        for output in (aspects.get("dataProcessInstanceOutput") or {}).get("outputs", []):
            yield str(output), int(event.get("timestampMillis", 0))
