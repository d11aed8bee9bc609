"""The parts of a scenario that are not SQL on the warehouse: a dbt test whose severity is warn
(set in the deployed project, never the tracked one), a metadata-only change written into
DataHub through its one writer per aspect, and a check that reports one failure with no change
in the data (a monitor or a dbt test)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from upstream_dagster.conformance.proposals import Change
from upstream_dagster.datahub import changes
from upstream_dagster.datahub.assertions import assertion_column
from upstream_dagster.datahub.model import SearchQuery, assertion_properties
from upstream_dagster.datahub.protocol import MetadataGraph
from upstream_dagster.datahub.signals import report_run
from upstream_dagster.errors import UpstreamError
from upstream_dagster.evaluation.scenario import Fault, Flaky
from upstream_dagster.spec.urns import name_matches, relation_of, unquoted
from upstream_dagster.warehouse.dbt_project import DbtProject
from upstream_dagster.warehouse.names import in_datahub

# metadata aspect -> (the change's kind, how its value is written)
_METADATA = {
    "owner": ("add_owner", "urn:li:corpuser:{}"),
    "description": ("set_description", "{}"),
    "tag": ("add_tag", "urn:li:tag:{}"),
    "term": ("add_term", "urn:li:glossaryTerm:{}"),
    "domain": ("set_domain", "urn:li:domain:{}"),
}


def _test_node(project: DbtProject, name: str) -> dict[str, Any]:
    tests = {
        str(n["name"]): n
        for n in project.manifest()["nodes"].values()
        if n["resource_type"] == "test"
    }
    if name not in tests:
        close = sorted(t for t in tests if name.split("_")[0] in t)[:6]
        raise UpstreamError(
            f"warn names {name!r}, which is not a dbt test of the project",
            "name a test as dbt names it, e.g. " + ", ".join(close or sorted(tests)[:6]),
        )
    return dict(tests[name])


def _warn_entry(entry: Any, test: str) -> Any:
    """A column's test entry with severity warn, whatever shape it was written in."""
    if entry == test:
        return {test: {"config": {"severity": "warn"}}}
    if isinstance(entry, dict) and test in entry:
        body = dict(entry[test] or {})
        body["config"] = {**(body.get("config") or {}), "severity": "warn"}
        return {test: body}
    return entry


def set_warn(project: DbtProject, names: list[str]) -> list[str]:
    """Give each named dbt test severity warn in the deployed project's YAML; returns what
    changed. dbt then reports the failure and builds what is downstream anyway."""
    done = []
    for name in names:
        node = _test_node(project, name)
        meta = node.get("test_metadata") or {}
        test, column = str(meta.get("name", "")), node.get("column_name")
        model = str(node.get("attached_node") or "").rpartition(".")[2]
        path = project.project_dir / str(node["original_file_path"])
        doc = yaml.safe_load(path.read_text()) or {}
        hit = False
        for m in doc.get("models") or []:
            if m.get("name") != model:
                continue
            for col in m.get("columns") or []:
                if unquoted(str(col.get("name"))) != unquoted(str(column)):
                    continue  # a `quote: true` column: its tests name it with its quotes
                for key in ("data_tests", "tests"):
                    if key in col:
                        col[key] = [_warn_entry(e, test) for e in col[key]]
                        hit = True
        if not hit:
            raise UpstreamError(
                f"the test {name} is not written as a column test in {path.name}",
                "give warn a generic column test (not_null, unique, accepted_values, ...)",
            )
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        done.append(f"-- {name}: severity warn in {path.relative_to(project.project_dir)}")
    if done:
        project.parse()
    return done


def dataset_urn(graph: MetadataGraph, relation: str) -> str:
    """The dbt dataset DataHub holds for ``schema.table`` (its warehouse twin when no dbt one)."""
    table = ".".join(relation.lower().split(".")[-2:])
    found = [
        u
        for u in graph.search(SearchQuery(entity_type="dataset", names=(table.split(".")[-1],)))
        if relation_of(u) == table
    ]
    if not found:
        raise UpstreamError(
            f"DataHub holds no dataset {table}", "name a relation the estate's build ingested"
        )
    return sorted(found, key=lambda u: ("dataPlatform:dbt" not in u, u))[0]


def apply_metadata(
    graph: MetadataGraph, faults: list[Fault], renamed: Mapping[str, str]
) -> list[str]:
    """Each metadata fault written into DataHub: nothing in the warehouse changes. A fault
    naming the warehouse's table of a node DataHub names otherwise (``renamed``: DataHub's
    name -> the table) lands on DataHub's entity."""
    done = []
    for f in faults:
        kind, shape = _METADATA[str(f.aspect)]
        urn = dataset_urn(graph, in_datahub(f.table, renamed))
        written = changes.apply(graph, urn, Change(kind, (shape.format(f.to),)))  # type: ignore[arg-type]
        failed = [w.receipt.detail for w in written if not w.receipt.written]
        if failed:
            raise UpstreamError(f"the {f.aspect} of {f.table} was not written: {failed[0]}",
                                "check that DataHub accepts the value")  # fmt: skip
        done.append(f"-- DataHub: {f.aspect} of {f.table} set to {f.to}")
    return done


def _assertions(graph: MetadataGraph) -> list[tuple[str, dict[str, Any]]]:
    urns = graph.search(SearchQuery(entity_type="assertion"))
    infos = graph.get_aspects(urns, ["assertionInfo"])
    return [(u, infos.get(u, {}).get("assertionInfo") or {}) for u in sorted(urns)]


def _entity(info: dict[str, Any]) -> str:
    custom = info.get("customAssertion") or {}
    block = info.get("datasetAssertion") or {}
    return str(custom.get("entity") or block.get("dataset") or "")


def flaky_assertion(graph: MetadataGraph, flaky: Flaky) -> tuple[str, str]:
    """The assertion a flaky check names: an estate.yaml monitor's, or a dbt test's (by its
    name or the test's kind), on ``flaky.dataset`` when given."""
    want = flaky.check.lower()
    found = []
    for urn, info in _assertions(graph):
        props = assertion_properties(info)
        monitor = str(props.get("upstream_monitor", "")).lower()
        unique_id = str(props.get("dbt_unique_id", "")).lower()
        test = unique_id.split(".")[2] if unique_id.count(".") >= 2 else ""
        if monitor == want or (
            unique_id.startswith("test.") and (test == want or test.startswith(want + "_"))
        ):
            entity = _entity(info)
            column = (assertion_column(info) or "").lower()
            if (
                entity
                and (flaky.dataset is None or name_matches(entity, flaky.dataset))
                and (flaky.column is None or column == flaky.column.lower())
            ):
                found.append((urn, entity))
    if not found:
        raise UpstreamError(
            f"no assertion in DataHub belongs to the check {flaky.check!r}"
            + (f" on {flaky.dataset}" if flaky.dataset else ""),
            "name an estate.yaml monitor or a dbt test, after a build ran it",
        )
    return found[0]


def report_flaky(graph: MetadataGraph, flaky: Flaky, at_ms: int, run_id: str) -> str:
    """One failure of the check, with no change in the data (a timeout, a lost connection)."""
    urn, dataset = flaky_assertion(graph, flaky)
    report_run(graph, urn, dataset, False, {"message": "check timed out"}, at_ms, run_id)
    return urn
