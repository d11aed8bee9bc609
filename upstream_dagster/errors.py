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

    @classmethod
    def no_lite_file(cls, path: object) -> DataHubUnavailable:
        """DataHub Lite's file is not there: what to run to make one."""
        return cls(
            f"the DataHub Lite file {path} does not exist",
            "run `make demo` to build the demo estate and ingest it, or point "
            "UPSTREAM_STATE_DIR at a state folder that holds one",
        )


class BuildFailed(UpstreamError):
    """dbt or DataHub ingestion failed while building the estate."""


_USERINFO = re.compile(r"(//[^/\s:@]*):[^@\s/]*@")


def redact(text: str) -> str:
    """Text with any password inside a URL (``//user:secret@host``) replaced by ``***``: a
    DATAHUB_GMS_URL that carries credentials is never printed, logged or kept in run storage."""
    return _USERINFO.sub(r"\1:***@", text)
