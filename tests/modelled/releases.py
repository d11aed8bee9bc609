"""What a DataHub GMS of each release accepts on the write path, as `tests/datahub_schema/
SOURCE.md` records it from DataHub's source (commits cited there), with that release's GraphQL
schema (`tests/datahub_schema/versions/`). These facts are the tests' own: they are not read from
the product's version gates, so a gate that is wrong makes a modelled server refuse a write."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

VERSIONS = Path(__file__).resolve().parent.parent / "datahub_schema" / "versions"


@dataclass(frozen=True)
class Release:
    name: str  # "1.0"
    # a JSON patch whose body is an object {"arrayPrimaryKeys", "patch"}: 1.0 reads a patch as
    # a JSON array only (PatchItemImpl.convertToJsonPatch, .readArray(), at 449f10970b) and
    # answers "Invalid JSON Patch"; the object form came with d49b7841cb (2025-04-10), and an
    # existing entry without one of the keys stopped throwing with 650cff172d (2025-05-26).
    # No release modelled here has the one without the other.
    keyed_patch: bool
    # Domains.domainAssociations and the hook copying it into domains: c3b65c7b14 (1.7)
    domain_associations: bool
    # EditableDatasetPropertiesTemplate: an editable description by patch, 19d3e2c00c (1.4)
    description_template: bool
    # the Document entity (documentInfo, createDocument): 711ac49c0a (1.4)
    documents: bool

    @property
    def version(self) -> str:
        return f"v{self.name}.0"

    @property
    def key(self) -> tuple[int, int, int]:
        major, minor = self.name.split(".")
        return (int(major), int(minor), 0)


RELEASES: dict[str, Release] = {
    "1.0": Release("1.0", False, False, False, False),
    "1.3": Release("1.3", True, False, False, False),
    "1.4": Release("1.4", True, False, True, True),
    "1.6": Release("1.6", True, False, True, True),
    "1.7": Release("1.7", True, True, True, True),
}
ALL = tuple(sorted(p.stem for p in VERSIONS.glob("*.graphql")))  # every kept schema, 1.0-1.7


@functools.cache
def schema(name: str) -> Any:
    """The GraphQL schema a GMS of this release serves (the concatenated 35 files)."""
    import graphql

    return graphql.build_schema((VERSIONS / f"{name}.graphql").read_text())
