"""GraphQL as a modelled GMS answers it: a document the release's schema does not validate, or
variables it cannot coerce, is refused whole (HTTP 200 with ``errors``, as graphql-java answers);
otherwise each root field is resolved as DataHub's resolver does it, on the server's store, and
the answer is produced by executing the document over the release's schema, so every response
has exactly the shape that release produces."""

from __future__ import annotations

from typing import Any

from .releases import schema

Json = dict[str, Any]
RESULT = {"SUCCESS", "FAILURE", "ERROR", "INIT"}


def entity_type(value: Any, info: Any, abstract: Any) -> str:
    """An entity's GraphQL type from its URN, as the server resolves it."""
    kind = str(value["urn"]).split(":")[2]
    return {"corpuser": "CorpUser", "dataPlatform": "DataPlatform"}.get(
        kind, kind[0].upper() + kind[1:]
    )


def _errors(messages: list[str]) -> tuple[int, Json]:
    return 200, {"errors": [{"message": m} for m in messages], "data": None}


def _nested(node: Any, name: str) -> Any:
    """The first field called ``name`` under a selection."""
    for child in getattr(getattr(node, "selection_set", None), "selections", None) or ():
        if getattr(getattr(child, "name", None), "value", None) == name:
            return child
        found = _nested(child, name)
        if found is not None:
            return found
    return None


def _args(type_name: str, field: str, node: Any, variables: Json, release: str) -> Json:
    from graphql.execution.values import get_argument_values

    definition = schema(release).get_type(type_name).fields[field]
    return get_argument_values(definition, node, variables) if node is not None else {}


def answer(server: Any, body: Json) -> tuple[int, Json]:
    import graphql
    from graphql.execution.values import get_argument_values, get_variable_values

    release = server.release.name
    sdl = schema(release)
    document = graphql.parse(body["query"])
    invalid = graphql.validate(sdl, document)
    if invalid:
        return _errors([f"Validation error: {e.message}" for e in invalid])
    (op,) = [d for d in document.definitions if isinstance(d, graphql.OperationDefinitionNode)]
    variables = get_variable_values(sdl, op.variable_definitions or [], body.get("variables") or {})
    if isinstance(variables, list):
        return _errors([f"Variable error: {e.message}" for e in variables])
    root = sdl.mutation_type if op.operation.value == "mutation" else sdl.query_type
    data: Json = {}
    for node in op.selection_set.selections:
        name = node.name.value
        args = get_argument_values(root.fields[name], node, variables)
        try:
            data[name] = RESOLVERS[name](server, args, node, variables)
        except ValueError as exc:  # the resolver's own refusal
            return 200, {"errors": [{"message": str(exc), "path": [name]}], "data": {name: None}}
    result = graphql.execute_sync(
        sdl, document, root_value=data, variable_values=variables, type_resolver=entity_type
    )
    assert result.errors is None, result.errors  # the model answers in the schema's shape
    return 200, {"data": result.data}


# -- resolvers: (server, arguments, field node, variables) -> the field's value --------------
def _search(server: Any, args: Json, node: Any, variables: Json) -> Json:
    wanted = {t.replace("_", "").lower() for t in args["input"].get("types") or []}
    urns = sorted({u for u, _ in server.aspects} | set(server.runs))
    hits = [u for u in urns if not wanted or u.split(":")[2].lower() in wanted]
    results = [{"entity": {"urn": u, "type": u.split(":")[2].upper()}} for u in hits]
    return {"nextScrollId": None, "count": len(hits), "total": len(hits), "searchResults": results}


def _run_event(event: Json) -> Json:
    result = event.get("result") or {}
    native = [{"key": k, "value": str(v)} for k, v in (result.get("nativeResults") or {}).items()]
    return {**event, "result": {"type": result.get("type"), "nativeResults": native}}


def _entities(server: Any, args: Json, node: Any, variables: Json) -> list[Json]:
    runs = _args(
        "Assertion", "runEvents", _nested(node, "runEvents"), variables, server.release.name
    )
    out = []
    for urn in args["urns"]:
        events = sorted(server.runs.get(urn, []), key=lambda e: -int(e["timestampMillis"]))
        since = runs.get("startTimeMillis")
        events = [e for e in events if since is None or int(e["timestampMillis"]) >= since]
        events = events[: runs.get("limit") or len(events)]
        out.append({"urn": urn, "runEvents": {"runEvents": [_run_event(e) for e in events]}})
    return out


def _raise_incident(server: Any, args: Json, node: Any, variables: Json) -> str:
    """RaiseIncidentResolver.mapIncidentInfo: source MANUAL whatever is sent."""
    given = args["input"]
    urn = f"urn:li:incident:{next(server.ids):08d}-modelled"
    stamp = {"time": 1795990000000, "actor": f"urn:li:corpuser:{server.actor}"}
    status = {**given.get("status", {"state": "ACTIVE"}), "lastUpdated": stamp}
    priority = {"CRITICAL": 0, "HIGH": 1, "MEDIUM": 2, "LOW": 3}
    info = {
        "type": given["type"],
        "entities": given.get("resourceUrns") or [given["resourceUrn"]],
        "status": status,
        "source": {"type": "MANUAL"},
        "created": stamp,
        **{
            k: given[k] for k in ("customType", "title", "description", "startedAt") if given.get(k)
        },
    }
    if given.get("priority"):
        info["priority"] = priority[given["priority"]]
    if given.get("assigneeUrns"):
        info["assignees"] = [{"actor": a, "assignedAt": stamp} for a in given["assigneeUrns"]]
    server.seed(urn, "incidentInfo", info)
    return urn


def _update_incident_status(server: Any, args: Json, node: Any, variables: Json) -> bool:
    info = server.value(args["urn"], "incidentInfo")
    if info is None:
        raise ValueError(f"Failed to update incident {args['urn']}: it does not exist")
    stamp = {"time": 1795990000000, "actor": f"urn:li:corpuser:{server.actor}"}
    server.seed(
        args["urn"], "incidentInfo", {**info, "status": {**args["input"], "lastUpdated": stamp}}
    )
    return True


def _dataset(server: Any, args: Json, node: Any, variables: Json) -> Json:
    page = _args("Dataset", "incidents", _nested(node, "incidents"), variables, server.release.name)
    found = [
        {"urn": u, "description": v.get("description")}
        for (u, a), (v, _) in sorted(server.aspects.items())
        if a == "incidentInfo" and args["urn"] in v.get("entities", [])
    ]
    start, count = page.get("start") or 0, page.get("count") or 20
    return {
        "urn": args["urn"],
        "incidents": {"total": len(found), "incidents": found[start : start + count]},
    }


def _upsert_custom_assertion(server: Any, args: Json, node: Any, variables: Json) -> Json:
    """UpsertCustomAssertionResolver: the definition as assertionInfo; no customProperties."""
    given, urn = args["input"], args["urn"]
    custom = {"type": given["type"], "entity": given["entityUrn"], "logic": given.get("logic")}
    if given.get("fieldPath"):
        custom["field"] = f"urn:li:schemaField:({given['entityUrn']},{given['fieldPath']})"
    info = {"type": "CUSTOM", "description": given["description"], "source": {"type": "EXTERNAL"},
            "customAssertion": {k: v for k, v in custom.items() if v is not None}}  # fmt: skip
    server.seed(urn, "assertionInfo", info)
    return {"urn": urn}


def _report_assertion_result(server: Any, args: Json, node: Any, variables: Json) -> bool:
    urn, given = args["urn"], args["result"]
    info = server.value(urn, "assertionInfo") or {}
    entity = (info.get("customAssertion") or {}).get("entity", "")
    native = {p["key"]: p["value"] for p in given.get("properties") or []}
    event = {"timestampMillis": given["timestampMillis"], "runId": str(given["timestampMillis"]),
             "asserteeUrn": entity, "assertionUrn": urn, "status": "COMPLETE",
             "result": {"type": given["type"], "nativeResults": native}}  # fmt: skip
    server.runs.setdefault(urn, []).append(event)
    return True


def _assertion(server: Any, args: Json, node: Any, variables: Json) -> Json | None:
    info = server.value(args["urn"], "assertionInfo")
    if info is None:
        return None
    custom = info.get("customAssertion")
    field = str((custom or {}).get("field") or "")
    shaped = {
        "description": info.get("description"),
        "customProperties": [
            {"key": k, "value": v} for k, v in (info.get("customProperties") or {}).items()
        ],
        "customAssertion": None
        if custom is None
        else {"type": custom["type"], "entityUrn": custom["entity"], "logic": custom.get("logic"),
              "field": {"path": field.rpartition(",")[2].rstrip(")")} if field else None},
    }  # fmt: skip
    return {"urn": args["urn"], "info": shaped}


def _me(server: Any, args: Json, node: Any, variables: Json) -> Json:
    user = {"urn": f"urn:li:corpuser:{server.actor}", "username": server.actor}
    return {"corpUser": user}


def _lineage(server: Any, args: Json, node: Any, variables: Json) -> Json:
    """No lineage is modelled: the server knows no downstream entity."""
    return {"nextScrollId": None, "count": 0, "total": 0, "searchResults": []}


RESOLVERS = {
    "scrollAcrossEntities": _search,
    "scrollAcrossLineage": _lineage,
    "entities": _entities,
    "raiseIncident": _raise_incident,
    "updateIncidentStatus": _update_incident_status,
    "dataset": _dataset,
    "upsertCustomAssertion": _upsert_custom_assertion,
    "reportAssertionResult": _report_assertion_result,
    "assertion": _assertion,
    "me": _me,
}
