"""Reading values out of the aspects that hold lists of them, the same way on every backend:
structured property values (number-aware) and the tags on each column."""

from __future__ import annotations

from collections.abc import Sequence

from upstream_dagster.datahub.model import Json


def plain(value: Json) -> str | float:
    """One structured property value (``{"string": ..}`` or ``{"double": ..}``) as plain data."""
    if "double" in value:
        return float(value["double"])
    return str(value.get("string", next(iter(value.values()), "")))


def property_values(aspect: Json | None) -> dict[str, list[str | float]]:
    """structuredProperties as {property URN: its values}."""
    return {
        str(p["propertyUrn"]): [plain(v) for v in p.get("values") or []]
        for p in (aspect or {}).get("properties") or []
    }


def shown(prop: str, values: Sequence[str | float], numbers: set[str]) -> list[str]:
    """Values as comparable text: a number-typed property's 0.40 and 0.4 are the same."""
    return [str(float(v)) if prop in numbers else str(v) for v in values]


def field_tags(aspect: Json | None) -> dict[str, set[str]]:
    """editableSchemaMetadata as {field path: its tags}."""
    return {
        str(f["fieldPath"]): {t["tag"] for t in (f.get("globalTags") or {}).get("tags", [])}
        for f in (aspect or {}).get("editableSchemaFieldInfo") or []
    }
