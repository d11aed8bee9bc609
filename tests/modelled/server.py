"""A DataHub GMS of one release, modelled on DataHub's server source (no server can run here):
it keeps aspects with their versions, answers the requests Upstream and the SDK make, and
refuses what a server of that release refuses (`releases`), in the words and statuses it uses.

- ``GET /config``: the release (ConfigurationController; what DataHubGraph reads).
- ``POST /aspects?action=ingestProposal``: UPSERT and PATCH as AspectResource takes them; a
  validation failure is a 422 with the validator's message, an ``If-Version-Match`` that does
  not name the aspect's version is refused (ConditionalWriteValidator: "Expected version ...");
  sent ``async``, the proposal is queued and a refusal never comes back.
- ``POST /openapi/v3/entity/{type}/batchGet``: {urn, <aspect>: {value, systemMetadata}}.
- ``GET /aspects/{urn}?aspect=&version=0``: the Rest.li aspect read (DataHubGraph.get_aspect).
- ``POST /api/graphql``: validated against the release's schema first (`graphql_model`).

Install it with `serve` (requests to HOST reach it); ``interleave`` holds edits another writer
makes between a read and a write (one before each write), to model a concurrent edit."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
import requests
from requests.adapters import BaseAdapter

from . import graphql_model, patching
from .releases import RELEASES, Release

HOST = "http://gms.modelled:8080"
Json = dict[str, Any]
TIMESERIES = {"assertionRunEvent", "datasetProfile", "operation"}


def aspect_class(aspect: str) -> Any:
    from datahub.emitter.aspect import ASPECT_MAP

    return ASPECT_MAP.get(aspect)


def entity_of(urn: str) -> str:
    return urn.split(":")[2]


class ModelledGms(BaseAdapter):
    def __init__(self, release: Release, actor: str = "datahub") -> None:
        super().__init__()
        self.release = release
        self.actor = actor
        self.aspects: dict[tuple[str, str], tuple[Json, int]] = {}  # -> (value, version)
        self.runs: dict[str, list[Json]] = {}  # assertion URN -> run events
        self.sent: list[Json] = []  # every request, as the server read it
        self.interleave: list[Callable[[], None]] = []
        self.ids = itertools.count(1)

    # -- the store --------------------------------------------------------------------------
    def seed(self, urn: str, aspect: str, value: Json) -> None:
        held = self.aspects.get((urn, aspect))
        self.aspects[(urn, aspect)] = (value, held[1] + 1 if held else 1)

    def value(self, urn: str, aspect: str) -> Json | None:
        held = self.aspects.get((urn, aspect))
        return held[0] if held else None

    def version(self, urn: str, aspect: str) -> str:
        held = self.aspects.get((urn, aspect))
        return str(held[1]) if held else "-1"

    def proposals(self, urn: str | None = None) -> list[Json]:
        return [s for s in self.sent if s["kind"] == "proposal" and urn in (None, s["urn"])]

    # -- HTTP -----------------------------------------------------------------------------
    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        url = urlsplit(request.url or "")
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        body = json.loads(request.body) if request.body else None
        status, payload = self.route(str(request.method), url.path, query, body)
        response = requests.Response()
        response.status_code = status
        response._content = json.dumps(payload).encode()
        response.headers["Content-Type"] = "application/json"
        response.request, response.url = request, request.url
        return response

    def close(self) -> None:
        pass

    def route(self, method: str, path: str, query: Json, body: Any) -> tuple[int, Any]:
        if (method, path) == ("GET", "/config"):
            versions = {"acryldata/datahub": {"version": self.release.version, "commit": "0"}}
            return 200, {"noCode": "true", "versions": versions}
        if method == "POST" and path == "/aspects" and query.get("action") == "ingestProposal":
            return self.ingest(body["proposal"], asynchronous=body.get("async") == "true")
        if method == "POST" and path.startswith("/openapi/v3/entity/"):
            return self.batch_get(path.split("/")[4], body, query.get("systemMetadata"))
        if method == "GET" and path.startswith("/openapi/v2/timeline/v1/"):
            return 200, []  # no history is modelled: every aspect was written just now
        if method == "GET" and path.startswith("/aspects/"):
            return self.rest_aspect(unquote(path[len("/aspects/") :]), query)
        if (method, path) == ("POST", "/api/graphql"):
            self.sent.append({"kind": "graphql", "query": body["query"]})
            return graphql_model.answer(self, body)
        return 404, {"message": f"no modelled endpoint {method} {path}"}

    @staticmethod
    def refusal(status: int, message: str) -> tuple[int, Json]:
        exception = "com.linkedin.restli.server.RestLiServiceException"
        return status, {"exceptionClass": exception, "message": message, "status": status}

    # -- Rest.li ingestProposal -----------------------------------------------------------
    def ingest(self, proposal: Json, asynchronous: bool = False) -> tuple[int, Json]:
        urn, aspect, change = proposal["entityUrn"], proposal["aspectName"], proposal["changeType"]
        body = json.loads(proposal["aspect"]["value"])
        headers = proposal.get("headers") or {}
        self.sent.append(
            {
                "kind": "proposal",
                "urn": urn,
                "aspect": aspect,
                "change": change,
                "headers": headers,
                "body": body,
                "async": asynchronous,
            }
        )
        if entity_of(urn) == "document" and not self.release.documents:
            return self.refusal(500, "Failed to find entity with name document in EntityRegistry")
        if aspect_class(aspect) is None:
            return self.refusal(422, f"Unknown aspect {aspect} for entity {entity_of(urn)}")
        if aspect in TIMESERIES:
            if aspect == "assertionRunEvent":
                self.runs.setdefault(urn, []).append(body)
            return 200, {"value": urn}
        if self.interleave:  # another writer gets there between the read and this write
            self.interleave.pop(0)()
        expected, actual = headers.get("If-Version-Match"), self.version(urn, aspect)
        if expected is not None and expected != actual:
            if asynchronous:  # queued: the consumer drops it later, and nobody is told
                return 200, {"value": urn}
            return self.refusal(
                422,
                "Failed to validate MCP due to: ValidationExceptionCollection{EntityAspect:"
                f"({entity_of(urn)}, {aspect}) Exceptions: [PRECONDITION Expected version "
                f"{expected}, actual version {actual}]}}",
            )
        try:
            value = self.changed(urn, aspect, change, body)
        except patching.Refused as exc:
            return self.refusal(exc.status, str(exc))
        if value != self.value(urn, aspect):
            self.seed(urn, aspect, value)
        return 200, {"value": urn}

    def changed(self, urn: str, aspect: str, change: str, body: Any) -> Json:
        if change == "PATCH":
            value = patching.apply(aspect, self.value(urn, aspect), body, self.release)
        elif change == "UPSERT":
            value = body
        else:
            raise patching.Refused(f"change type {change} is not modelled", 400)
        if "domainAssociations" in value and not self.release.domain_associations:
            raise patching.Refused("unrecognized field found but not allowed", 422)
        from datahub.emitter.serialization_helper import post_json_transform

        try:  # the aspect's schema, as the server validates it
            typed = aspect_class(aspect).from_obj(post_json_transform(value))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise patching.Refused(f"ERROR :: {aspect} :: {exc}", 422) from exc
        if not typed.validate():
            raise patching.Refused(f"ERROR :: {aspect} :: does not match its schema", 422)
        return value

    # -- reads ------------------------------------------------------------------------------
    def batch_get(self, kind: str, body: list[Json], system: str | None) -> tuple[int, Any]:
        out = []
        for entry in body:
            urn = entry["urn"]
            assert entity_of(urn).lower() == kind, (urn, kind)
            item: Json = {"urn": urn}
            for aspect in set(entry) - {"urn"}:
                held = self.aspects.get((urn, aspect))
                if held is not None:
                    item[aspect] = {"value": held[0]}
                    if system == "true":
                        item[aspect]["systemMetadata"] = {"version": str(held[1])}
            out.append(item)
        return 200, out

    def rest_aspect(self, urn: str, query: Json) -> tuple[int, Json]:
        aspect = query["aspect"]
        held = self.aspects.get((urn, aspect))
        if held is None or query.get("version", "0") != "0":
            return 404, {"message": f"{aspect} of {urn} not found", "status": 404}
        name = aspect_class(aspect).RECORD_SCHEMA.fullname.replace(".pegasus2avro", "")
        return 200, {"aspect": {name: held[0]}, "version": 0}


def install(monkeypatch: pytest.MonkeyPatch, release: str, **kwargs: Any) -> ModelledGms:
    """Requests to HOST answered, from now on, by a modelled server of ``release``."""
    server = ModelledGms(RELEASES[release], **kwargs)
    original = requests.Session.get_adapter

    def get_adapter(self: requests.Session, url: str) -> BaseAdapter:
        return server if url.startswith(HOST) else original(self, url)

    monkeypatch.setattr(requests.Session, "get_adapter", get_adapter)
    return server


def serve(monkeypatch: pytest.MonkeyPatch, release: str, **kwargs: Any) -> Iterator[ModelledGms]:
    """`install` as a fixture's generator."""
    yield install(monkeypatch, release, **kwargs)
