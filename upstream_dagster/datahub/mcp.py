"""Turn a plain aspect value into an SDK MetadataChangeProposal (the only SDK type we build)."""

from __future__ import annotations

from typing import Any

from upstream_dagster.datahub import _sdk
from upstream_dagster.datahub.model import Json


def build_mcp(urn: str, aspect: str, value: Json) -> Any:
    _sdk.prepare()
    from datahub.emitter.aspect import ASPECT_MAP
    from datahub.emitter.mcp import MetadataChangeProposalWrapper
    from datahub.emitter.serialization_helper import post_json_transform

    if aspect not in ASPECT_MAP:
        raise KeyError(f"DataHub has no aspect named {aspect!r}")
    typed = ASPECT_MAP[aspect].from_obj(post_json_transform(value))
    if not typed.validate():
        raise ValueError(f"value does not match the {aspect} schema")
    return MetadataChangeProposalWrapper(entityUrn=urn, aspect=typed)
