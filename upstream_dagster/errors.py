"""Errors that name what failed and how to fix it."""

from __future__ import annotations

import re


class UpstreamError(Exception):
    """A failure a user can act on: ``str(err)`` says what failed and the fix."""

    def __init__(self, problem: str, fix: str) -> None:
        problem, fix = redact(problem), redact(fix)
        self.problem = problem
        self.fix = fix
        super().__init__(f"{problem}\n  fix: {fix}")

    def __reduce__(self) -> tuple[type[UpstreamError], tuple[str, str]]:
        # rebuilt from problem and fix: an error raised in a worker process comes back whole
        # (the default rebuilds from the one formatted message, which __init__ cannot take)
        return (type(self), (self.problem, self.fix))


class DataHubUnavailable(UpstreamError):
    """The configured DataHub (Lite file or GMS) cannot be used."""


class BuildFailed(UpstreamError):
    """dbt or DataHub ingestion failed while building the estate."""


_USERINFO = re.compile(r"(//[^/\s:@]*):[^@\s/]*@")


def redact(text: str) -> str:
    """Text with any password inside a URL (``//user:secret@host``) replaced by ``***``: a
    DATAHUB_GMS_URL that carries credentials is never printed, logged or kept in run storage."""
    return _USERINFO.sub(r"\1:***@", text)
