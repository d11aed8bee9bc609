"""How the short names people write in estate.yaml become DataHub URNs."""

from __future__ import annotations

PREFIX = {
    "domains": "urn:li:domain:",
    "tags": "urn:li:tag:",
    "terms": "urn:li:glossaryTerm:",
    "owners": "urn:li:corpuser:",
    "structured_properties": "urn:li:structuredProperty:",
}


def to_urn(kind: str, value: str) -> str:
    """`finance` -> `urn:li:domain:finance`; a value that already is a URN is kept as written."""
    return value if value.startswith("urn:li:") else PREFIX[kind] + value


def to_urns(kind: str, values: list[str]) -> tuple[str, ...]:
    return tuple(to_urn(kind, v) for v in values)


def short(urn: str) -> str:
    """The readable tail of a URN: `urn:li:tag:tier1` -> `tier1`."""
    if urn.startswith("urn:li:dataset:("):
        return urn.split(",")[1]
    return urn.rsplit(":", 1)[-1]
