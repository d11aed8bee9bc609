"""What Upstream reports about a dbt node (profiles, monitors, assertion runs) lands on the entity
DataHub's own dbt source made for it: found by a blind project whose source reads a table of
another name (`identifier:`), whose profile created a second, phantom entity that was scored."""

from __future__ import annotations

import json
from pathlib import Path

from datahub.ingestion.source.dbt.dbt_common import DBTSourceReport
from datahub.ingestion.source.dbt.dbt_core import extract_dbt_entities

from upstream_dagster.services.observe import manifest_nodes
from upstream_dagster.warehouse.dbt_project import DbtProject
from upstream_dagster.warehouse.names import renamed

SOURCES = """\
sources:
  - name: gateway
    schema: telemetry
    tables:
      - name: fuel_events
        identifier: fuel_txn_raw
      - name: pings
"""


def test_every_node_is_named_as_datahubs_dbt_source_names_it(tmp_path: Path) -> None:
    (tmp_path / "dbt_project.yml").write_text("name: p\nprofile: p\nversion: '1.0'\n")
    (tmp_path / "profiles.yml").write_text(
        "p:\n  target: dev\n  outputs:\n    dev:\n      type: duckdb\n      path: w.duckdb\n"
    )
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "sources.yml").write_text(SOURCES)
    (tmp_path / "models" / "stg_fuel.sql").write_text(
        "select * from {{ source('gateway', 'fuel_events') }}"
    )
    (tmp_path / "models" / "Mixed_Case.sql").write_text(
        "{{ config(alias='mixed_alias') }}select * from {{ source('gateway', 'pings') }}"
    )
    (tmp_path / "snapshots").mkdir()
    (tmp_path / "snapshots" / "pings_snapshot.sql").write_text(
        "{% snapshot pings_snapshot %}{{ config(target_schema='history', unique_key='id', "
        "strategy='check', check_cols='all') }}select * from {{ source('gateway', 'pings') }}"
        "{% endsnapshot %}"
    )
    project = DbtProject(tmp_path, tmp_path, tmp_path / "w.duckdb")
    assert project.run("parse").returncode == 0
    manifest = json.loads((tmp_path / "target" / "manifest.json").read_text())
    theirs = extract_dbt_entities(
        {**manifest["nodes"], **manifest["sources"]},
        None,
        [],
        "duckdb",
        use_identifiers=False,  # DataHub's default, and Upstream's recipe leaves it
        tag_prefix="dbt:",
        only_include_if_in_catalog=False,
        include_database_name=True,
        report=DBTSourceReport(),
    )
    datahub = {n.dbt_name: n.get_urn("dbt", "PROD", None) for n in theirs}
    ours = {n.unique_id: n for n in manifest_nodes(manifest)}
    assert {uid: n.urn for uid, n in ours.items()} == {uid: datahub[uid] for uid in ours}
    # and each is measured in the table the warehouse holds
    assert ours["source.p.gateway.fuel_events"].table == "telemetry.fuel_txn_raw"
    assert ours["model.p.Mixed_Case"].table == "main.mixed_alias"
    # a snapshot is a table too: profiled, so a refresh that re-ran it is seen to write nothing
    assert ours["snapshot.p.pings_snapshot"].table == "history.pings_snapshot"
    # every query for an entity DataHub named goes to that table: the two names differ only
    # for the source read under its identifier, and node_of finds the node by either name
    assert renamed(manifest) == {"telemetry.fuel_events": "telemetry.fuel_txn_raw"}
    for name in ("telemetry.fuel_events", "telemetry.fuel_txn_raw"):
        found = project.node_of(name)
        assert found is not None and found["unique_id"] == "source.p.gateway.fuel_events"
