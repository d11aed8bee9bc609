"""Monitors and profiles in Dagster: each monitor in estate.yaml is an asset check on the dbt
assets its selectors match, reported into DataHub as an assertion with a run event;
`warehouse_profiles` profiles every relation after each build into DataHub's
``datasetProfile``. The measuring and reporting is `services.observe`."""

from collections.abc import Iterator, Sequence
from typing import Any

import dagster as dg

from upstream_dagster.defs.resources import WAREHOUSE_POOL, DataHubResource, WarehouseResource
from upstream_dagster.services import observe
from upstream_dagster.services.observe import Node
from upstream_dagster.spec.models import EstateSpec, Monitor


def monitor_checks(
    spec: EstateSpec,
    nodes: Sequence[Node],
    keys: dict[str, dg.AssetKey],
    after: dg.AssetKey,
) -> list[dg.AssetChecksDefinition]:
    pairs = observe.monitored(spec, nodes)
    if not pairs:
        return []
    by_check: dict[dg.AssetCheckKey, tuple[Monitor, Node]] = {
        dg.AssetCheckKey(keys[node.unique_id], f"monitor_{m.name}"): (m, node) for m, node in pairs
    }
    specs = [
        dg.AssetCheckSpec(
            key.name,
            asset=key.asset_key,
            # After the profiles (and so after ingestion): a symptom is stamped after DataHub
            # learned of every change its build made.
            additional_deps=[after],
            description=f"estate.yaml monitor {m.name}: {m.rule.replace('_', ' ')}"
            + (f" on {', '.join(m.columns)}" if m.columns else "")
            + f" (threshold {m.threshold}). Reported into DataHub as an assertion.",
        )
        for key, (m, _) in by_check.items()
    ]

    @dg.multi_asset_check(
        specs=specs,
        name="estate_monitors",
        pool=WAREHOUSE_POOL,
        can_subset=True,
        description="The monitors block of estate.yaml: deterministic rules over the warehouse, "
        "each reported into DataHub as an assertion with a run event.",
    )
    def estate_monitors(
        context: dg.AssetCheckExecutionContext,
        datahub: DataHubResource,
        warehouse: WarehouseResource,
    ) -> Iterator[dg.AssetCheckResult]:
        selected = sorted(context.selected_asset_check_keys, key=str)
        with datahub.graph() as graph:
            outcomes = observe.run_monitors(
                graph, warehouse.get(), [by_check[k] for k in selected], context.run.run_id
            )
        for key, outcome in zip(selected, outcomes, strict=True):
            yield dg.AssetCheckResult(
                asset_key=key.asset_key,
                check_name=key.name,
                passed=not outcome.failed,
                metadata={
                    "result": dg.MetadataValue.md(
                        "\n".join(
                            f"- {'PASS' if v.passed else 'FAIL'} {c or 'rows'}: {v.message}"
                            for c, v in outcome.verdicts
                        )
                    ),
                    "failing_columns": len(outcome.failed),
                    "reported_to": datahub.backend,
                },
                description="; ".join(outcome.failed) or None,
            )

    return [estate_monitors]


def profiles_asset(nodes: Sequence[Node], deps: list[Any]) -> dg.AssetsDefinition:
    @dg.asset(
        name="warehouse_profiles",
        deps=deps,
        pool=WAREHOUSE_POOL,
        group_name="datahub",
        kinds={"datahub", "duckdb"},
        description="Profiles every relation of the estate after each build (rows, NULL share "
        "and mean per column) into DataHub's datasetProfile, so the lineage walk can compare "
        "each node with its own history.",
    )
    def warehouse_profiles(
        context: dg.AssetExecutionContext,
        datahub: DataHubResource,
        warehouse: WarehouseResource,
    ) -> dg.MaterializeResult[Any]:
        with datahub.graph() as graph:
            done = observe.profile_all(graph, warehouse.get(), nodes, context.run.run_id)
        if done.missing:
            context.log.warning(f"not in the warehouse, not profiled: {', '.join(done.missing)}")
        for table, why in done.broken:
            context.log.warning(f"{table} would not answer, not profiled: {why}")
        return dg.MaterializeResult(
            metadata={
                "profiled": done.profiled,
                "missing": dg.MetadataValue.json(list(done.missing)),
                "would_not_answer": dg.MetadataValue.json(dict(done.broken)),
                "guards_checked": len(done.guards),
                "guards_failing": dg.MetadataValue.json([g for g, ok in done.guards if not ok]),
            }
        )

    return warehouse_profiles
