"""Structured properties and column tags on a GMS: only what changed travels, as the SDK's
patch where the server takes it, else merged into the aspect by a conditional write, so the
properties and tags other people set are never overwritten."""

from __future__ import annotations

from collections.abc import Sequence

from upstream_dagster.datahub.changes import set_property_patch
from upstream_dagster.datahub.gms.assertion_writes import AssertionWrites
from upstream_dagster.datahub.gms.routes import patches
from upstream_dagster.datahub.model import Json, Receipt
from upstream_dagster.datahub.values import field_tags, property_values, shown


def typed(value: Json, numbers: set[str]) -> Json:
    """A structuredProperties value whose number-typed properties hold numbers, as their
    definitions say (the server refuses a string for a number)."""

    def retyped(entry: Json) -> Json:
        if entry.get("propertyUrn") not in numbers:
            return entry
        values = [{"double": float(next(iter(v.values())))} for v in entry.get("values", [])]
        return {**entry, "values": values}

    return {**value, "properties": [retyped(p) for p in value.get("properties", [])]}


class PropertyWrites(AssertionWrites):
    def _number_typed(self, props: Sequence[str]) -> set[str]:
        found = self.get_aspects(list(props), ["propertyDefinition"])
        return {
            p
            for p, a in found.items()
            if str((a.get("propertyDefinition") or {}).get("valueType", "")).endswith("number")
        }

    def _properties(self, urn: str) -> dict[str, list[str | float]]:
        aspect = self.get_aspects([urn], ["structuredProperties"]).get(urn, {})
        return property_values(aspect.get("structuredProperties"))

    def _write_structured(self, urn: str, value: Json) -> Receipt:
        from datahub.specific.dataset import DatasetPatchBuilder

        current = self._properties(urn)
        want = property_values(value)
        changed_props = [p for p in want if want[p] != current.get(p)]
        removed = sorted(current.keys() - want.keys())
        if not changed_props and not removed:
            return Receipt(urn, "structuredProperties", True, "already as wanted in DataHub GMS")
        numbers = self._number_typed(list(want))
        if patches(self.version, "set_structured_property"):
            builder = DatasetPatchBuilder(urn)
            for prop in changed_props:
                set_property_patch(builder, prop, [str(v) for v in want[prop]], numbers)
            for prop in removed:
                builder.remove_structured_property(prop)
            for mcp in builder.build():  # only the changed properties travel; the rest stay
                self._graph.emit_mcp(mcp)
            how = "patched"
        else:
            self.conditional(urn, "structuredProperties", lambda now: typed(value, numbers))
            how = "merged with If-Version-Match"
        back = self._properties(urn)
        ok = all(
            shown(p, back.get(p, []), numbers) == shown(p, vals, numbers)
            for p, vals in want.items()
        )
        if not ok or back.keys() & set(removed):
            return Receipt(urn, "structuredProperties", False, f"{how} but did not read back")
        count = len(changed_props) + len(removed)
        return Receipt(urn, "structuredProperties", True, f"{count} propert(ies) {how}, read back")

    # -- column tags: patches of the tags added to a field ----------------------------------
    def _write_field_tags(self, urn: str, value: Json) -> Receipt:
        """Tags added to columns go as field patches (a JSON array every 1.x takes); any other
        change to the aspect is an upsert of the whole aspect, as before."""
        from datahub.metadata.schema_classes import TagAssociationClass
        from datahub.specific.dataset import DatasetPatchBuilder

        def rest(aspect: Json | None) -> list[Json]:
            return [
                {k: v for k, v in f.items() if k != "globalTags"}
                for f in (aspect or {}).get("editableSchemaFieldInfo") or []
                if set(f) - {"fieldPath", "globalTags"}
            ]

        def held() -> Json | None:
            found = self.get_aspects([urn], ["editableSchemaMetadata"]).get(urn, {})
            return found.get("editableSchemaMetadata")

        current = held()
        have, want = field_tags(current), field_tags(value)
        removed = any(have.get(f, set()) - want.get(f, set()) for f in have)
        if removed or rest(current) != rest(value):
            return self._upsert(urn, "editableSchemaMetadata", value)
        builder = DatasetPatchBuilder(urn)
        added = 0
        for field_path, wanted in want.items():
            for tag in sorted(wanted - have.get(field_path, set())):
                builder.for_field(field_path).add_tag(TagAssociationClass(tag))
                added += 1
        if not added:
            return Receipt(urn, "editableSchemaMetadata", True, "already tagged in DataHub GMS")
        for mcp in builder.build():
            self._graph.emit_mcp(mcp)
        back = field_tags(held())
        if any(not wanted <= back.get(f, set()) for f, wanted in want.items()):
            return Receipt(urn, "editableSchemaMetadata", False, "patched but did not read back")
        return Receipt(urn, "editableSchemaMetadata", True, f"{added} column tag(s) patched")
