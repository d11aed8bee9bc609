"""The read slices assembled into assets: a dbt node and its warehouse twin become one asset
(named by the dbt entity), lineage and column edges are re-rooted onto it, freshness is the
newest of what DataHub records about it."""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from upstream_dagster.conformance.context import (
    AssertionFact,
    AssetFacts,
    Column,
    IncidentFact,
    LazyColumns,
    MetadataContext,
    SliceReport,
)
from upstream_dagster.datahub.model import Json
from upstream_dagster.spec.urns import (
    dataset_name,
    entity_type,
    field_dataset,
    field_path,
    platform_of,
)


class Packed(MutableMapping[str, Json]):
    """One URN's raw aspects until assemble reads them, each kept as its JSON text.

    Parsed, the aspects of a million datasets (a dict, its keys and its strings per aspect)
    were most of the read path's peak, about three times their JSON text. ``pack`` keeps an
    aspect's JSON as text (orjson's bytes each hold a 4 KiB buffer, so ``.decode()``: a str is
    its own length) and every read decodes it again (assemble reads each once); a value set
    with ``[]`` (the slimmed schema, whose field dicts are shared across assets) stays as it
    is, so its sharing survives.
    """

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held: dict[str, Any] = {}

    def pack(self, aspects: Mapping[str, Json]) -> None:
        for name, value in aspects.items():
            self._held[name] = orjson.dumps(value).decode()

    def __getitem__(self, name: str) -> Json:
        value = self._held[name]
        decoded: Json = orjson.loads(value) if isinstance(value, str) else value
        return decoded

    def __setitem__(self, name: str, value: Json) -> None:
        self._held[name] = value

    def __delitem__(self, name: str) -> None:
        del self._held[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._held)

    def __len__(self) -> int:
        return len(self._held)

    def unpacked(self) -> dict[str, Json]:
        """Every aspect decoded once, as a plain dict."""
        return {name: self[name] for name in self._held}


@dataclass
class Raw:
    """What the slices read: the asset URNs, their aspects, slice reports, display names."""

    urns: list[str] = field(default_factory=list)
    aspects: dict[str, Packed] = field(default_factory=lambda: defaultdict(Packed))
    slices: list[SliceReport] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)
    around: dict[str, dict[str, Json]] = field(default_factory=dict)  # containers, data jobs
    field_docs: dict[str, dict[str, str]] = field(default_factory=dict)  # dataset -> path -> text
    asked: set[str] = field(default_factory=set)  # URNs whose display name was read


def referenced(aspects: Mapping[str, Json], key: str) -> list[str]:
    """The owners, domains, terms or tags an asset's aspects name, as URNs."""
    if key == "owners":
        return [o["owner"] for o in (aspects.get("ownership") or {}).get("owners", [])]
    if key == "domains":
        return list((aspects.get("domains") or {}).get("domains", []))
    if key == "terms":
        return [t["urn"] for t in (aspects.get("glossaryTerms") or {}).get("terms", [])]
    return [t["tag"] for t in (aspects.get("globalTags") or {}).get("tags", [])]


def owner_type(owner: Json) -> str:
    """How an owner owns: the custom ownership type's name when set, else the built-in type."""
    custom = str(owner.get("typeUrn") or "")
    if custom:
        return custom.rsplit(":", 1)[-1].removeprefix("__system__").strip("_") or custom
    return str(owner.get("type") or "NONE")


def _primaries(raw: Raw) -> dict[str, str]:
    """Secondary twin -> primary (the dbt entity), from the siblings aspects."""
    out: dict[str, str] = {}
    for urn in raw.urns:
        held = raw.aspects.get(urn)
        sib = held.get("siblings") if held is not None else None
        if sib and not sib.get("primary", False) and sib.get("siblings"):
            out[urn] = sys.intern(str(sib["siblings"][0]))
    return out


def human_text(documentation: Json | None) -> str:
    """The newest entry of a ``documentation`` aspect a person or a propagation wrote; text
    DataHub marks as inferred (written by a model) is not someone's documentation."""
    entries = [
        d
        for d in (documentation or {}).get("documentations") or []
        if str(((d.get("attribution") or {}).get("sourceDetail") or {}).get("inferred", ""))
        .strip()
        .lower()
        != "true"
        and str(d.get("documentation") or "").strip()
    ]
    entries.sort(key=lambda d: int((d.get("attribution") or {}).get("time") or 0))
    return str(entries[-1]["documentation"]).strip() if entries else ""


def field_texts(aspects: Json) -> dict[str, str]:
    """Field path -> its description, the editable one first."""
    out = {
        str(f["fieldPath"]): str(f.get("description") or "")
        for f in (aspects.get("schemaMetadata") or {}).get("fields") or ()
    }
    for e in (aspects.get("editableSchemaMetadata") or {}).get("editableSchemaFieldInfo") or ():
        if e.get("description"):
            out[str(e["fieldPath"])] = str(e["description"])
    return {k: v for k, v in out.items() if v}


def _columns(aspects: Json, documented: dict[str, str]) -> Sequence[Column]:
    fields = (aspects.get("schemaMetadata") or {}).get("fields") or ()
    editable = (aspects.get("editableSchemaMetadata") or {}).get("editableSchemaFieldInfo") or ()
    docs = tuple(sorted(documented.items()))
    return LazyColumns(tuple(fields), tuple(editable), docs) if fields else ()


def _sql(aspects: Json) -> str:
    view = aspects.get("viewProperties") or {}
    if str(view.get("viewLanguage") or "SQL").upper() != "SQL":
        return ""  # LookML, M, DAX: not SQL sqlglot can read
    return str(view.get("formattedViewLogic") or view.get("viewLogic") or "").strip()


def _union(values: Iterable[Iterable[str]]) -> tuple[str, ...]:
    """Every value once, sorted; each string the interpreter's one copy (``sys.intern``): an
    owner, domain, tag or term is named by thousands of assets, and at a million datasets a
    copy per asset was a tenth of the context."""
    return tuple(sorted({sys.intern(v) for group in values for v in group}))


def _facts_of(urn: str, a: Json, documented: dict[str, str]) -> dict[str, Any]:
    props = a.get("datasetProperties") or {}
    info = a.get("dashboardInfo") or a.get("chartInfo") or {}
    description = (
        (a.get("editableDatasetProperties") or {}).get("description")
        or props.get("description")
        or info.get("description")
        or human_text(a.get("documentation"))
        or ""
    )
    structured = tuple(
        sorted(
            (str(p["propertyUrn"]), tuple(str(next(iter(v.values()))) for v in p.get("values", [])))
            for p in (a.get("structuredProperties") or {}).get("properties", [])
        )
    )
    updated = max(
        [
            int((a.get("operation") or {}).get("lastUpdatedTimestamp", 0)),
            int((props.get("lastModified") or {}).get("time", 0)),
        ]
    )
    return {
        "description": str(description).strip(),
        **{key: referenced(a, key) for key in ("owners", "domains", "tags", "terms")},
        "subtypes": [sys.intern(t) for t in (a.get("subTypes") or {}).get("typeNames", [])],
        "structured": structured,
        "columns": _columns(a, documented),
        "container": sys.intern(str((a.get("container") or {}).get("container") or "")),
        "sql": _sql(a),
        "updated": updated,
        "title": str(info.get("title") or ""),
        "display": str(props.get("name") or info.get("title") or ""),
        "owner_types": tuple(
            sorted(
                (sys.intern(str(o["owner"])), sys.intern(owner_type(o)))
                for o in (a.get("ownership") or {}).get("owners", [])
            )
        ),
        "properties": tuple(
            sorted((str(k), str(v)) for k, v in (props.get("customProperties") or {}).items())
        ),
    }


def assemble(
    raw: Raw,
    edges: list[Any],
    assertions: dict[str, list[AssertionFact]],
    incidents: dict[str, list[IncidentFact]],
    runs_by_output: dict[str, tuple[int, str]],
    as_of_ms: int,
    transport: str,
) -> MetadataContext:
    secondary = _primaries(raw)
    # primary -> every URN read for it, the primary first
    groups: dict[str, dict[str, None]] = {}
    for urn in dict.fromkeys(raw.urns):
        primary = secondary.get(urn, urn)
        groups.setdefault(primary, {primary: None})[urn] = None
    for urn, primary in secondary.items():
        groups.setdefault(primary, {primary: None})[urn] = None

    def prime(urn: str) -> str:
        # the asset's own URN string (interned as it was read), not the lineage edge's copy
        return secondary.get(urn) or sys.intern(urn)

    ups, downs, column_edges, jobs_of = _lineage(edges, raw, prime)
    assets = []
    # A URN's raw aspects are dropped once the last asset built from them is: at a million
    # datasets the raw JSON and the facts made from it no longer have to fit side by side.
    uses = Counter(u for group in groups.values() for u in group)
    for primary, group in sorted(groups.items()):
        members = list(group)
        read = {u: raw.aspects[u].unpacked() if u in raw.aspects else {} for u in members}
        # a field's text on a twin documents the same field here (DataHub's sibling rule)
        twin_docs = {k: v for u in members[::-1] for k, v in field_texts(read[u]).items()}
        facts = [_facts_of(u, read[u], {**twin_docs, **raw.field_docs.get(u, {})}) for u in members]
        del read
        for u in members:
            uses[u] -= 1
            if not uses[u]:
                raw.aspects.pop(u, None)
        main = facts[0]
        columns = main["columns"] or next((f["columns"] for f in facts if f["columns"]), ())
        fresh = [runs_by_output[u] for u in members if u in runs_by_output]
        fresh += [(f["updated"], "DataHub lastModified/operation") for f in facts if f["updated"]]
        last = max(fresh) if fresh else (None, "")
        kind = entity_type(primary)
        assets.append(
            AssetFacts(
                urn=primary,
                entity_type=kind,
                platform=platform_of(primary),
                name=main["title"] or dataset_name(primary),
                twins=tuple(members[1:]),
                subtypes=_union(f["subtypes"] for f in facts),
                description=main["description"]
                or next((f["description"] for f in facts if f["description"]), ""),
                columns=columns,
                owners=_union(f["owners"] for f in facts),
                owner_types=tuple(sorted({t for f in facts for t in f["owner_types"]})),
                display_name=main["display"]
                or next((f["display"] for f in facts if f["display"]), ""),
                domains=_union(f["domains"] for f in facts),
                tags=_union(f["tags"] for f in facts),
                terms=_union(f["terms"] for f in facts),
                structured_properties=main["structured"]
                or next((f["structured"] for f in facts if f["structured"]), ()),
                assertions=tuple(
                    sorted({a for u in members for a in assertions.get(u, ())}, key=lambda a: a.urn)
                ),
                incidents=tuple(
                    sorted({i for u in members for i in incidents.get(u, ())}, key=lambda i: i.urn)
                ),
                last_updated_ms=last[0],
                last_updated_source=last[1],
                upstreams=tuple(sorted(ups.get(primary, ()))),
                downstreams=tuple(sorted(downs.get(primary, ()))),
                properties=main["properties"],
                container=next((f["container"] for f in facts if f["container"]), ""),
                sql=main["sql"] or next((f["sql"] for f in facts if f["sql"]), ""),
                jobs=tuple(sorted({j for u in members for j in jobs_of.get(u, ())})),
            )
        )
    return MetadataContext(
        as_of_ms=as_of_ms,
        transport=transport,
        assets=tuple(assets),
        slices=tuple(raw.slices),
        column_edges=tuple(sorted(column_edges)),
        names=tuple(sorted(raw.names.items())),
        around=tuple(_around(urn, a) for urn, a in sorted(raw.around.items())),
    )


def _lineage(
    edges: list[Any], raw: Raw, prime: Callable[[str], str]
) -> tuple[dict[str, set[str]], dict[str, set[str]], set[tuple[str, str]], dict[str, set[str]]]:
    """Dataset lineage with the data jobs between datasets taken out: a job's inputs feed its
    outputs (and its column lineage their columns); each dataset keeps the jobs it passes."""
    ups: dict[str, set[str]] = defaultdict(set)
    downs: dict[str, set[str]] = defaultdict(set)
    column_edges: set[tuple[str, str]] = set()
    ins: dict[str, set[str]] = defaultdict(set)
    outs: dict[str, set[str]] = defaultdict(set)
    pairs: list[tuple[str, str]] = []
    for e in edges:
        if entity_type(e.downstream) == "dataJob":
            ins[e.downstream].add(e.upstream)
        elif entity_type(e.upstream) == "dataJob":
            outs[e.upstream].add(e.downstream)
        else:
            pairs.append((e.upstream, e.downstream))
        for c in e.columns:
            column_edges.add((c.upstream_field, c.downstream_field))
    jobs_of: dict[str, set[str]] = defaultdict(set)
    for job in sorted(set(ins) | set(outs)):
        for u in ins[job] | outs[job]:
            jobs_of[u].add(job)
        pairs += [(i, o) for i in sorted(ins[job]) for o in sorted(outs[job])]
        io = (raw.around.get(job) or {}).get("dataJobInputOutput") or {}
        for fine in io.get("fineGrainedLineages") or []:
            column_edges |= {
                (u, d) for u in fine.get("upstreams") or [] for d in fine.get("downstreams") or []
            }
    for up, down in pairs:
        up, down = prime(up), prime(down)
        if up != down:
            ups[down].add(up)
            downs[up].add(down)
    rerooted = {(_reroot(u, prime), _reroot(d, prime)) for u, d in column_edges}
    return ups, downs, rerooted, jobs_of


def _around(urn: str, a: Json) -> AssetFacts:
    """A container or data job as evidence: its name, owners, domains and parent container."""
    info = a.get("dataJobInfo") or a.get("containerProperties") or {}
    return AssetFacts(
        urn=urn,
        entity_type=entity_type(urn),
        platform=platform_of(urn),
        name=str(info.get("name") or ""),
        display_name=str(info.get("name") or ""),
        owners=tuple(sorted(set(referenced(a, "owners")))),
        owner_types=tuple(
            sorted(
                {
                    (str(o["owner"]), owner_type(o))
                    for o in (a.get("ownership") or {}).get("owners", [])
                }
            )
        ),
        domains=tuple(sorted(set(referenced(a, "domains")))),
        container=str((a.get("container") or {}).get("container") or ""),
    )


def _reroot(field_urn: str, prime: Callable[[str], str]) -> str:
    dataset = field_dataset(field_urn)
    if not dataset:
        return field_urn
    return f"urn:li:schemaField:({prime(dataset)},{field_path(field_urn)})"
