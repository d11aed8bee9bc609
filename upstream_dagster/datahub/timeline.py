"""Derive DataHub Timeline API transactions from stored aspect versions.

DataHub Lite keeps every version of an aspect but has no timeline. This module diffs consecutive
versions the way DataHub's change-event generators do and emits the same event shape. Only the
content that a person would call a change is compared; audit stamps and ingestion timestamps are
ignored, so re-ingesting identical artifacts yields no transaction.

Renames follow DataHub OSS: a removed and an added field become one MODIFY only when their type,
parent path and a non-blank description all match; otherwise they are reported as REMOVE + ADD.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from upstream_dagster.datahub.model import AspectVersion, ChangeEvent, Json, Transaction

CATEGORY_ASPECTS: Mapping[str, tuple[str, ...]] = {
    "TECHNICAL_SCHEMA": ("schemaMetadata",),
    "DOCUMENTATION": ("datasetProperties", "editableDatasetProperties", "schemaMetadata"),
    "OWNERSHIP": ("ownership",),
    "TAG": ("globalTags", "schemaMetadata"),
    "GLOSSARY_TERM": ("glossaryTerms", "schemaMetadata"),
}
ALL_CATEGORIES = tuple(CATEGORY_ASPECTS)
# DataHub renamed OWNER to OWNERSHIP (PR 16929) and still accepts the old name.
ALIASES = {"OWNER": "OWNERSHIP"}


def canonical(category: str) -> str:
    return ALIASES.get(category, category)


_RANK = {"NONE": 0, "PATCH": 1, "MINOR": 2, "MAJOR": 3}


def aspects_for(categories: Iterable[str]) -> list[str]:
    names: list[str] = []
    for category in categories:
        for aspect in CATEGORY_ASPECTS[canonical(category)]:
            if aspect not in names:
                names.append(aspect)
    return names


def field_urn(dataset_urn: str, field_path: str) -> str:
    return f"urn:li:schemaField:({dataset_urn},{field_path})"


def _fields(schema: Json | None) -> dict[str, Json]:
    if not schema:
        return {}
    return {f["fieldPath"]: f for f in schema.get("fields", [])}


def _field_type(f: Json) -> str:
    kind = f.get("type", {}).get("type", {})
    type_name = next(iter(kind), "") if isinstance(kind, dict) else str(kind)
    return f"{type_name}:{f.get('nativeDataType', '')}"


def _parent(path: str) -> str:
    return path.rsplit(".", 1)[0] if "." in path else ""


def _desc(f: Json) -> str:
    return str(f.get("description") or "").strip()


def _ids(items: Iterable[Json], key: str) -> set[str]:
    return {str(i[key]) for i in items if key in i}


class _Diff:
    def __init__(self, urn: str, ts: int) -> None:
        self.urn, self.ts = urn, ts
        self.events: list[ChangeEvent] = []
        self.change = "NONE"

    def add(
        self, category: str, op: str, modifier: str | None, params: Json, text: str, level: str
    ) -> None:
        self.events.append(ChangeEvent(self.urn, category, op, modifier, params, text, self.ts))
        if _RANK[level] > _RANK[self.change]:
            self.change = level


def _diff_schema(d: _Diff, old: Json | None, new: Json | None, categories: set[str]) -> None:
    before, after = _fields(old), _fields(new)
    removed = [p for p in before if p not in after]
    added = [p for p in after if p not in before]
    if "TECHNICAL_SCHEMA" in categories:
        renamed: dict[str, str] = {}
        for old_path in removed:
            f_old = before[old_path]
            for new_path in added:
                f_new = after[new_path]
                if (
                    new_path not in renamed.values()
                    and _field_type(f_old) == _field_type(f_new)
                    and _parent(old_path) == _parent(new_path)
                    and _desc(f_old)
                    and _desc(f_old) == _desc(f_new)
                ):
                    renamed[old_path] = new_path
                    break
        for old_path, new_path in renamed.items():
            d.add(
                "TECHNICAL_SCHEMA",
                "MODIFY",
                field_urn(d.urn, new_path),
                {
                    "fieldPath": new_path,
                    "oldFieldPath": old_path,
                    "nativeType": after[new_path].get("nativeDataType"),
                },
                f"A field {old_path!r} was renamed to {new_path!r}.",
                "MAJOR",
            )
        for path in removed:
            if path not in renamed:
                d.add(
                    "TECHNICAL_SCHEMA",
                    "REMOVE",
                    field_urn(d.urn, path),
                    {"fieldPath": path, "nativeType": before[path].get("nativeDataType")},
                    f"A field {path!r} was removed.",
                    "MAJOR",
                )
        for path in added:
            if path not in renamed.values():
                d.add(
                    "TECHNICAL_SCHEMA",
                    "ADD",
                    field_urn(d.urn, path),
                    {
                        "fieldPath": path,
                        "nativeType": after[path].get("nativeDataType"),
                        "nullable": bool(after[path].get("nullable", False)),
                    },
                    f"A field {path!r} was added.",
                    "MINOR",
                )
        for path in before.keys() & after.keys():
            if _field_type(before[path]) != _field_type(after[path]):
                d.add(
                    "TECHNICAL_SCHEMA",
                    "MODIFY",
                    field_urn(d.urn, path),
                    {
                        "fieldPath": path,
                        "oldNativeType": before[path].get("nativeDataType"),
                        "newNativeType": after[path].get("nativeDataType"),
                    },
                    f"The type of field {path!r} changed.",
                    "MAJOR",
                )
    for path in sorted(before.keys() & after.keys()):
        if "DOCUMENTATION" in categories and _desc(before[path]) != _desc(after[path]):
            _doc_event(d, field_urn(d.urn, path), _desc(before[path]), _desc(after[path]))
        if "TAG" in categories:
            _set_events(
                d,
                "TAG",
                field_urn(d.urn, path),
                _ids(before[path].get("globalTags", {}).get("tags", []), "tag"),
                _ids(after[path].get("globalTags", {}).get("tags", []), "tag"),
                "tagUrn",
            )
        if "GLOSSARY_TERM" in categories:
            _set_events(
                d,
                "GLOSSARY_TERM",
                field_urn(d.urn, path),
                _ids(before[path].get("glossaryTerms", {}).get("terms", []), "urn"),
                _ids(after[path].get("glossaryTerms", {}).get("terms", []), "urn"),
                "termUrn",
            )


def _doc_event(d: _Diff, target: str, old: str, new: str) -> None:
    op = "ADD" if not old else "REMOVE" if not new else "MODIFY"
    d.add(
        "DOCUMENTATION",
        op,
        target,
        {"description": new, "oldDescription": old},
        f"Documentation of {target} {op.lower()}ed."
        if op != "MODIFY"
        else f"Documentation of {target} changed.",
        "PATCH",
    )


def _set_events(
    d: _Diff, category: str, target: str, old: set[str], new: set[str], key: str
) -> None:
    for item in sorted(new - old):
        d.add(
            category,
            "ADD",
            item,
            {key: item, "target": target},
            f"{item} was added to {target}.",
            "MINOR",
        )
    for item in sorted(old - new):
        d.add(
            category,
            "REMOVE",
            item,
            {key: item, "target": target},
            f"{item} was removed from {target}.",
            "MINOR",
        )


def _owners(value: Json | None) -> set[str]:
    return {f"{o['owner']}|{o.get('type', '')}" for o in (value or {}).get("owners", [])}


def _diff_aspect(
    d: _Diff, aspect: str, old: Json | None, new: Json | None, categories: set[str]
) -> None:
    if aspect == "schemaMetadata":
        _diff_schema(d, old, new, categories)
    elif aspect in ("datasetProperties", "editableDatasetProperties"):
        if "DOCUMENTATION" in categories:
            before = str((old or {}).get("description") or "").strip()
            after = str((new or {}).get("description") or "").strip()
            if before != after:
                _doc_event(d, d.urn, before, after)
    elif aspect == "ownership" and "OWNERSHIP" in categories:
        for key in sorted(_owners(new) - _owners(old)):
            owner, kind = key.split("|", 1)
            d.add(
                "OWNERSHIP",
                "ADD",
                owner,
                {"ownerUrn": owner, "ownerType": kind},
                f"{owner} was added as {kind or 'an owner'}.",
                "MINOR",
            )
        for key in sorted(_owners(old) - _owners(new)):
            owner, kind = key.split("|", 1)
            d.add(
                "OWNERSHIP",
                "REMOVE",
                owner,
                {"ownerUrn": owner, "ownerType": kind},
                f"{owner} was removed as {kind or 'an owner'}.",
                "MINOR",
            )
    elif aspect == "globalTags" and "TAG" in categories:
        _set_events(
            d,
            "TAG",
            d.urn,
            _ids((old or {}).get("tags", []), "tag"),
            _ids((new or {}).get("tags", []), "tag"),
            "tagUrn",
        )
    elif aspect == "glossaryTerms" and "GLOSSARY_TERM" in categories:
        _set_events(
            d,
            "GLOSSARY_TERM",
            d.urn,
            _ids((old or {}).get("terms", []), "urn"),
            _ids((new or {}).get("terms", []), "urn"),
            "termUrn",
        )


def _bump(version: tuple[int, int, int], change: str) -> tuple[int, int, int]:
    major, minor, patch = version
    if change == "MAJOR":
        return (major + 1, 0, 0)
    if change == "MINOR":
        return (major, minor + 1, 0)
    if change == "PATCH":
        return (major, minor, patch + 1)
    return version


def derive(
    urn: str,
    history: Mapping[str, Sequence[AspectVersion]],
    categories: Iterable[str] = ALL_CATEGORIES,
    start_ms: int | None = None,
    end_ms: int | None = None,
) -> list[Transaction]:
    """Transactions for ``urn`` from each aspect's version history, oldest first."""
    wanted = set(categories)
    unknown = wanted - set(CATEGORY_ASPECTS)
    if unknown:
        raise ValueError(f"unknown timeline categories {sorted(unknown)}; use {ALL_CATEGORIES}")
    # Each aspect write is a step; steps written at the same instant form one transaction.
    steps: dict[int, list[tuple[str, Json | None, Json]]] = defaultdict(list)
    stamps: dict[int, list[str]] = defaultdict(list)
    for aspect, versions in history.items():
        previous: Json | None = None
        for v in sorted(versions, key=lambda x: x.version):
            steps[v.created_ms].append((aspect, previous, v.value))
            stamps[v.created_ms].append(f"{aspect}:{v.version}")
            previous = v.value
    transactions: list[Transaction] = []
    sem: tuple[int, int, int] = (0, 0, 0)
    for ts in sorted(steps):
        diff = _Diff(urn, ts)
        for aspect, old, new in steps[ts]:
            _diff_aspect(diff, aspect, old, new, wanted)
        if not diff.events:
            continue
        sem = _bump(sem, diff.change)
        if (start_ms is not None and ts < start_ms) or (end_ms is not None and ts > end_ms):
            continue
        transactions.append(
            Transaction(
                timestamp_ms=ts,
                sem_ver=".".join(map(str, sem)),
                sem_ver_change=diff.change,
                version_stamp=",".join(sorted(stamps[ts])),
                events=tuple(diff.events),
            )
        )
    return transactions
