"""One builder per aspect Upstream writes whole: assertion definitions (a proposal's template,
an estate.yaml monitor, an incident's guard), assertion run events, structured property
definitions. Each role keeps its own ``upstream_<role>`` property, so readers tell them apart.
"""

from __future__ import annotations

from upstream_dagster.conformance.templates import describe, parse
from upstream_dagster.datahub.model import Json
from upstream_dagster.spec.urns import field_urn

ACTOR = "urn:li:corpuser:upstream"


def assertion_info(
    dataset: str,
    *,
    label: str,
    logic: str,
    description: str,
    properties: dict[str, str],
    column: str | None = None,
) -> Json:
    """A dataset-level CUSTOM assertion; a column check names its column in ``field`` (DataHub
    OSS rejects run events of column-level assertions)."""
    custom: Json = {"type": label, "entity": dataset, "logic": logic}
    if column:
        custom["field"] = field_urn(dataset, column)
    return {
        "type": "CUSTOM",
        "customAssertion": custom,
        "description": description,
        "customProperties": properties,
    }


def template_assertion(dataset: str, template: str) -> Json:
    """A proposal's assertion: a template of `services.templates`' catalog."""
    t = parse(template)
    return assertion_info(
        dataset,
        label=f"upstream {t.kind}",
        logic=template,
        description=describe(template),
        properties={"upstream_template": template},
        column=t.column or None,
    )


def monitor_assertion(
    monitor: str, rule: str, threshold: float, dataset: str, column: str | None
) -> Json:
    """An estate.yaml monitor on one dataset (and column)."""
    return assertion_info(
        dataset,
        label=f"Upstream monitor: {rule}",
        logic=f"{rule} threshold={threshold}",
        description=f"Upstream monitor {monitor}: {rule.replace('_', ' ')}"
        + (f" on {column}" if column else ""),
        properties={"upstream_monitor": monitor, "upstream_rule": rule},
        column=column,
    )


BUILD_PROPERTY = "upstream_build"


def build_assertion(dataset: str) -> Json:
    """A model's build as a check: fails when the build could not write the model (a loud
    failure), with the builder's error in the run event. DataHub's own dbt source records the
    run as a dataProcessInstance without the error; this is what a sensor and an incident can
    hold on to."""
    return assertion_info(
        dataset,
        label="Upstream build check: dbt build",
        logic="dbt build",
        description="dbt build of the model",
        properties={BUILD_PROPERTY: "dbt"},
    )


def guard_assertion(rule: str, dataset: str, column: str) -> Json:
    """A guard an incident leaves at the cause (schema contract, not-null)."""
    return assertion_info(
        dataset,
        label=f"Upstream guard: {rule}",
        logic=f"{rule}({column})",
        description=f"Upstream guard: {rule.replace('_', ' ')} on {column}",
        properties={"upstream_guard": rule, "column": column},
        column=column,
    )


def run_event(
    assertion: str,
    dataset: str,
    passed: bool,
    native: dict[str, str],
    at_ms: int,
    run_id: str,
    observed: float | None = None,
    evaluable: bool = True,
) -> Json:
    """One assertionRunEvent, asserted on the dataset: ERROR when the check could not be
    evaluated (its data is not there), else SUCCESS or FAILURE."""
    kind = ("SUCCESS" if passed else "FAILURE") if evaluable else "ERROR"
    event: Json = {
        "timestampMillis": at_ms,
        "runId": run_id,
        "asserteeUrn": dataset,
        "assertionUrn": assertion,
        "status": "COMPLETE",
        "result": {"type": kind, "nativeResults": native},
    }
    if observed is not None:
        event["result"]["actualAggValue"] = observed
    return event


def property_definition(
    name: str, value_type: str, description: str, *, multiple: bool = False
) -> Json:
    """A structured property that datasets may carry."""
    return {
        "qualifiedName": name,
        "displayName": name,
        "valueType": value_type,
        "cardinality": "MULTIPLE" if multiple else "SINGLE",
        "entityTypes": ["urn:li:entityType:datahub.dataset"],
        "description": description,
    }
