"""Every HTTP exchange with a GMS, kept in the format the `gms` tests replay (method, path,
query, GraphQL operation and variables, status, answer), grouped by what was being done.

`recording` installs a `Recorder` for requests to one GMS address only. Secrets never reach the
record: request headers (the ``Authorization`` bearer token) are not kept, nor the host; the
token's text is replaced wherever it appears, and so is the value of any field whose name says
it is a secret (``token``, ``password``, ``secret``, ``credential``, ``key`` as in api key)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import requests
from requests.adapters import BaseAdapter, HTTPAdapter

from upstream_dagster.datahub.model import Json

REDACTED = "***"
SECRET_FIELD = re.compile(r"token|password|secret|credential|api[_-]?key", re.IGNORECASE)


def redacted(value: Any, secrets: tuple[str, ...]) -> Any:
    """A copy of a JSON value with every secret taken out."""
    if isinstance(value, dict):
        return {
            k: REDACTED if SECRET_FIELD.search(str(k)) and v else redacted(v, secrets)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redacted(v, secrets) for v in value]
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, REDACTED)
    return value


def exchange(request: requests.PreparedRequest, response: requests.Response) -> Json:
    """One exchange as the tests replay it."""
    url = urlsplit(request.url or "")
    out: Json = {"method": request.method, "path": url.path}
    if url.query:
        out["expect_query"] = parse_qs(url.query)
    body = json.loads(request.body) if isinstance(request.body, str | bytes) else None
    if isinstance(body, dict) and "query" in body:
        name = re.search(r"(?:query|mutation)\s+(\w+)", str(body["query"]))
        if name:
            out["operation"] = name.group(1)
        out["expect_variables"] = body.get("variables") or {}
    if isinstance(body, dict) and isinstance(body.get("proposal"), dict):
        # what was written and how (a PATCH, an UPSERT and its If-Version-Match)
        proposal = body["proposal"]
        keys = ("entityUrn", "aspectName", "changeType", "headers")
        out["expect_proposal"] = {k: proposal[k] for k in keys if proposal.get(k)}
    if response.status_code != 200:
        out["status"] = response.status_code
    try:
        out["response"] = response.json()
    except ValueError:
        out["response"] = {"text": response.text[:2000]}
    return out


@dataclass
class Recorder(BaseAdapter):
    """Passes every request on (through ``inner``) and keeps it, under the current scene."""

    inner: BaseAdapter = field(default_factory=HTTPAdapter)
    secrets: tuple[str, ...] = ()
    scene: str = "connect"
    scenes: dict[str, list[Json]] = field(default_factory=dict)
    recording: bool = True

    def __post_init__(self) -> None:
        super().__init__()

    def mark(self, scene: str) -> None:
        """What the exchanges from now on are for."""
        self.scene = scene

    @property
    def exchanges(self) -> list[Json]:
        return self.scenes.setdefault(self.scene, [])

    def send(  # type: ignore[override]
        self, request: requests.PreparedRequest, **kwargs: Any
    ) -> requests.Response:
        response = self.inner.send(request, **kwargs)
        if self.recording:
            self.exchanges.append(redacted(exchange(request, response), self.secrets))
        return response

    def close(self) -> None:
        self.inner.close()

    def fixtures(self, about: str) -> Json:
        """The record: one fixture per scene, in the order they happened."""
        return {name: {"_about": about, "exchanges": ex} for name, ex in self.scenes.items()}


@contextmanager
def recording(url: str, secrets: tuple[str, ...] = ()) -> Iterator[Recorder]:
    """Every request to the GMS at ``url`` recorded while the block runs."""
    recorder = Recorder(secrets=tuple(s for s in secrets if s))
    original = requests.Session.get_adapter
    base = url.rstrip("/")

    def get_adapter(self: requests.Session, url: str) -> BaseAdapter:
        if not url.startswith(base):
            return original(self, url)
        recorder.inner = original(self, url)  # the session's own adapter sends it on
        return recorder

    requests.Session.get_adapter = get_adapter  # type: ignore[method-assign]
    try:
        yield recorder
    finally:
        requests.Session.get_adapter = original  # type: ignore[method-assign]
