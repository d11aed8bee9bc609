"""Every write Upstream makes, through the `gms` backend, against a modelled server of each
release 1.0, 1.3, 1.4, 1.6 and 1.7 (tests/modelled/server.py): the server keeps what it is sent
and refuses what that release refuses (tests/modelled/releases.py, from DataHub's source as
tests/datahub_schema/SOURCE.md records it), so a write sent in a shape its release does not
take fails here. Each write must land: it is checked in what the server holds, not only in the
receipt. All exchanges here are modelled; none were recorded from a server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from upstream_dagster.conformance.proposals import Change
from upstream_dagster.datahub import changes, scribe
from upstream_dagster.datahub.gms import GmsGraph
from upstream_dagster.evaluation.capture import GUARD, LEDGER, RAW, guard_info, incident_info

from .modelled.server import HOST, ModelledGms, install, serve

RELEASES = ["1.0", "1.3", "1.4", "1.6", "1.7"]
SCORE = "urn:li:structuredProperty:fragilityScore"
THEIRS = "urn:li:structuredProperty:retentionTime"
DOC = "urn:li:document:upstream-postmortem-0123456789abcdef0123"


@pytest.fixture(params=RELEASES)
def server(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ModelledGms]:
    yield from serve(monkeypatch, request.param)


def _estate(server: ModelledGms) -> None:
    """What ingestion left: an owner without typeUrn (the entry old servers choke on), a
    property someone else set, and the number-typed property's definition."""
    server.seed(
        LEDGER, "ownership", {"owners": [{"owner": "urn:li:corpuser:ana", "type": "DATAOWNER"}]}
    )
    server.seed(LEDGER, "structuredProperties", {"properties": [
        {"propertyUrn": THEIRS, "values": [{"double": 90.0}]}]})  # fmt: skip
    server.seed(SCORE, "propertyDefinition", {
        "qualifiedName": "fragilityScore", "valueType": "urn:li:dataType:datahub.number",
        "entityTypes": ["urn:li:entityType:datahub.dataset"]})  # fmt: skip


CHANGES: list[tuple[str, tuple[str, ...]]] = [
    ("add_owner", ("urn:li:corpuser:bo",)),
    ("add_term", ("urn:li:glossaryTerm:Finance.Revenue",)),
    ("add_tag", ("urn:li:tag:tier1",)),
    ("set_structured_property", (SCORE, "0.40")),
    ("add_memory", ("https://upstream.invalid/runbooks/k1", "Runbook: check the feed first.")),
    ("set_domain", ("urn:li:domain:finance",)),
    ("set_description", ("Ledger of every posted amount, one row per posting.",)),
    ("add_column_tag", ("amount", "urn:li:tag:upstream-root-cause")),
]


def _lands(server: ModelledGms) -> dict[str, bool]:
    """What the server holds, write kind by write kind."""
    held = lambda aspect: server.value(LEDGER, aspect) or {}  # noqa: E731
    props = {
        p["propertyUrn"]: p["values"] for p in held("structuredProperties").get("properties", [])
    }
    fields = held("editableSchemaMetadata").get("editableSchemaFieldInfo", [])
    return {
        "add_owner": [o["owner"] for o in held("ownership").get("owners", [])]
        == ["urn:li:corpuser:ana", "urn:li:corpuser:bo"],
        "add_term": [t["urn"] for t in held("glossaryTerms").get("terms", [])]
        == ["urn:li:glossaryTerm:Finance.Revenue"],
        "add_tag": [t["tag"] for t in held("globalTags").get("tags", [])] == ["urn:li:tag:tier1"],
        # ours typed as its definition says; the one someone else set is still there
        "set_structured_property": props == {THEIRS: [{"double": 90.0}], SCORE: [{"double": 0.4}]},
        "add_memory": [e["url"] for e in held("institutionalMemory").get("elements", [])]
        == ["https://upstream.invalid/runbooks/k1"],
        "set_domain": held("domains").get("domains") == ["urn:li:domain:finance"],
        "set_description": held("editableDatasetProperties")
        .get("description", "")
        .startswith("Ledger"),
        "add_column_tag": [t["tag"] for f in fields for t in f["globalTags"]["tags"]]
        == ["urn:li:tag:upstream-root-cause"],
    }


def test_modelled_every_release_takes_every_change_upstream_makes(server: ModelledGms) -> None:
    _estate(server)
    graph = GmsGraph(HOST)
    for kind, values in CHANGES:
        ((receipt, _),) = changes.apply(graph, LEDGER, Change(kind, values))  # type: ignore[arg-type]
        assert receipt.written, (server.release.name, kind, receipt.detail)
    assert _lands(server) == {kind: True for kind, _ in CHANGES}
    # a whole structuredProperties value (what undo restores): ours goes, theirs stays
    theirs = {"properties": [{"propertyUrn": THEIRS, "values": [{"double": 90.0}]}]}
    restored = graph.write_aspect(LEDGER, "structuredProperties", theirs)
    assert restored.written, restored.detail
    assert server.value(LEDGER, "structuredProperties") == theirs
    sent = {p["aspect"]: p for p in server.proposals(LEDGER)}
    keyed = server.release.keyed_patch
    # the SDK's patch where the release reads it; else the whole aspect, guarded by its version
    assert sent["ownership"]["change"] == ("PATCH" if keyed else "UPSERT")
    assert sent["domains"]["change"] == (
        "PATCH" if server.release.domain_associations else "UPSERT"
    )
    description = sent["editableDatasetProperties"]
    assert description["change"] == ("PATCH" if server.release.description_template else "UPSERT")
    for proposal in server.proposals(LEDGER):
        if proposal["change"] == "UPSERT":
            assert "If-Version-Match" in proposal["headers"], proposal["aspect"]
    # what docs/compatibility.md says each release is sent is what this one was sent
    from upstream_dagster.datahub.changes import WRITERS
    from upstream_dagster.datahub.gms.routes import describe

    for kind, _ in CHANGES:
        said = describe(_key(server.release.name), kind)
        assert sent[WRITERS[kind].aspect]["change"] == said.split()[0].replace(
            "read-modify-write,", "UPSERT"
        ), (kind, said)


def test_modelled_every_release_takes_every_assertion_incident_and_document_write(
    server: ModelledGms,
) -> None:
    graph = GmsGraph(HOST)
    graph.read_back_waits = (0.0,)
    (assertion,) = changes.receipts([changes.write(graph, GUARD, "assertionInfo", guard_info())])
    assert assertion.written, assertion.detail
    assert (server.value(GUARD, "assertionInfo") or {})["customAssertion"]["entity"] == RAW
    event = {"timestampMillis": 1795990600000, "runId": "r9", "asserteeUrn": RAW,
             "assertionUrn": GUARD, "status": "COMPLETE",
             "result": {"type": "FAILURE", "nativeResults": {"column": "rebate_amt"}}}  # fmt: skip
    result = graph.write_aspect(GUARD, "assertionRunEvent", event)
    assert result.written, result.detail
    assert [e["result"]["type"] for e in server.runs[GUARD]] == ["FAILURE"]

    linked = {"type": "ASSERTION_FAILURE", "sourceUrn": GUARD}
    key = "urn:li:incident:upstream-0123456789abcdef0123"
    raised = graph.write_aspect(key, "incidentInfo", incident_info(
        "FIELD", "ACTIVE", "INVESTIGATION", "NULLs in rebate_amt", source=linked))  # fmt: skip
    assert raised.written and raised.urn != key, raised.detail  # the server names it
    held = server.value(raised.urn, "incidentInfo") or {}
    assert held["source"] == linked  # the assertion link survives raiseIncident's MANUAL
    resolved = graph.write_aspect(key, "incidentInfo", incident_info(
        "FIELD", "RESOLVED", "FIXED", "check passes", source=linked))  # fmt: skip
    assert resolved.written and resolved.urn == raised.urn, resolved.detail
    held = server.value(raised.urn, "incidentInfo") or {}
    assert (held["status"]["state"], held["source"]) == ("RESOLVED", linked)

    info = {"title": "Post-mortem: NULLs in rebate_amt", "contents": {"text": "# Post-mortem"},
            "status": {"state": "PUBLISHED"}, "relatedAssets": [{"asset": LEDGER}],
            "created": {"time": 1, "actor": "urn:li:corpuser:upstream"},
            "lastModified": {"time": 1, "actor": "urn:li:corpuser:upstream"}}  # fmt: skip
    written = changes.receipts(scribe.document(graph, DOC, info))
    if not server.release.documents:  # no Document entity before 1.4: nothing is sent
        assert [r.written for r in written] == [False] and "1.4" in written[0].detail
        assert not server.proposals(DOC)
        return
    assert [r.written for r in written] == [True, True], [r.detail for r in written]
    assert (server.value(DOC, "documentInfo") or {})["title"].startswith("Post-mortem")
    owners = (server.value(DOC, "ownership") or {}).get("owners", [])
    assert [o["owner"] for o in owners] == ["urn:li:corpuser:upstream"]


def _refusal(graph: GmsGraph, mcp: Any) -> str:
    """What the server answers to one proposal sent as it is."""
    from datahub.configuration.common import GraphError

    with pytest.raises(GraphError) as refused:
        graph._graph.emit_mcp(mcp)
    return str(refused.value)


@pytest.fixture
def oldest(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModelledGms]:
    yield from serve(monkeypatch, "1.0")


def test_modelled_servers_refuse_what_their_release_refuses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The modelled servers are not lenient: each shape the write path must avoid is refused
    as DataHub refuses it, so a test above would fail if the path sent it."""
    from datahub.emitter.mcp import MetadataChangeProposalWrapper
    from datahub.metadata.schema_classes import (
        DomainAssociationClass,
        DomainsClass,
        OwnerClass,
        OwnershipTypeClass,
    )
    from datahub.specific.dataset import DatasetPatchBuilder

    def patch(build: Any) -> list[Any]:
        builder = DatasetPatchBuilder(LEDGER)
        build(builder)
        return builder.build()

    owner = patch(
        lambda b: b.add_owner(OwnerClass("urn:li:corpuser:bo", OwnershipTypeClass.DATAOWNER))
    )
    domain = patch(lambda b: b.add_domain(DomainAssociationClass(domain="urn:li:domain:finance")))
    described = patch(lambda b: b.set_description("d", editable=True))
    associations = MetadataChangeProposalWrapper(
        entityUrn=LEDGER, aspect=DomainsClass(domains=[], domainAssociations=[
            DomainAssociationClass(domain="urn:li:domain:finance")]))  # fmt: skip
    for name, refused in {
        "1.0": [(owner, "Invalid JSON Patch")],
        "1.3": [(domain, "unrecognized field"), (described, "no patch template")],
        "1.6": [(domain, "unrecognized field"), ([associations], "unrecognized field")],
    }.items():
        install(monkeypatch, name)
        graph = GmsGraph(HOST)
        for mcps, why in refused:
            assert why in _refusal(graph, mcps[0])
    install(monkeypatch, "1.3")
    graph = GmsGraph(HOST)
    document = MetadataChangeProposalWrapper(entityUrn=DOC, aspect=_document_info())
    assert "document" in _refusal(graph, document)
    stale = MetadataChangeProposalWrapper(entityUrn=LEDGER, aspect=DomainsClass(domains=[]),
                                          headers={"If-Version-Match": "7"})  # fmt: skip
    assert "Expected version 7, actual version -1" in _refusal(graph, stale)


def _document_info() -> Any:
    from datahub.metadata.schema_classes import (
        AuditStampClass,
        DocumentContentsClass,
        DocumentInfoClass,
        DocumentStatusClass,
    )

    stamp = AuditStampClass(1, "urn:li:corpuser:upstream")
    return DocumentInfoClass(
        contents=DocumentContentsClass(text="x"),
        created=stamp,
        lastModified=stamp,
        status=DocumentStatusClass(state="PUBLISHED"),
    )


def test_modelled_a_write_path_that_ignored_the_release_would_be_refused(
    oldest: ModelledGms, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same changes, sent as the SDK's patch whatever the release (as before this path
    knew releases): a 1.0 server refuses each keyed one, and nothing lands."""
    from upstream_dagster.datahub.gms import writes

    monkeypatch.setattr(writes, "patches", lambda version, kind: True)
    _estate(oldest)
    graph = GmsGraph(HOST)
    ((receipt, _),) = changes.apply(graph, LEDGER, Change("add_owner", ("urn:li:corpuser:bo",)))
    assert not receipt.written and "Invalid JSON Patch" in receipt.detail
    assert [o["owner"] for o in (oldest.value(LEDGER, "ownership") or {})["owners"]] == [
        "urn:li:corpuser:ana"
    ]


def test_modelled_a_concurrent_edit_is_merged_again_never_overwritten(oldest: ModelledGms) -> None:
    """Someone adds an owner between Upstream's read and its write: the conditional write is
    refused ("Expected version 1, actual version 2"), Upstream reads and merges again, and
    both owners are kept."""
    _estate(oldest)
    theirs = {"owner": "urn:li:corpuser:cy", "type": "TECHNICAL_OWNER"}

    def someone_else() -> None:
        held = oldest.value(LEDGER, "ownership") or {}
        oldest.seed(LEDGER, "ownership", {**held, "owners": [*held["owners"], theirs]})

    oldest.interleave.append(someone_else)
    graph = GmsGraph(HOST)
    from datahub.emitter.rest_emitter import EmitMode

    graph._graph._default_emit_mode = EmitMode.ASYNC  # as DATAHUB_EMIT_MODE=ASYNC would set it
    ((receipt, _),) = changes.apply(graph, LEDGER, Change("add_owner", ("urn:li:corpuser:bo",)))
    assert receipt.written and "after 1 concurrent edit" in receipt.detail, receipt.detail
    owners = [o["owner"] for o in (oldest.value(LEDGER, "ownership") or {})["owners"]]
    assert owners == ["urn:li:corpuser:ana", "urn:li:corpuser:cy", "urn:li:corpuser:bo"]
    tried = [(p["headers"]["If-Version-Match"], p["async"]) for p in oldest.proposals(LEDGER)]
    assert tried == [("1", False), ("2", False)]  # the version read each time, sent in sync


def test_modelled_edits_that_never_stop_leave_a_receipt_and_overwrite_nothing(
    oldest: ModelledGms,
) -> None:
    _estate(oldest)
    graph = GmsGraph(HOST)
    bump = lambda: oldest.seed(LEDGER, "ownership", oldest.value(LEDGER, "ownership") or {})  # noqa: E731
    for _ in range(graph.conflict_tries):
        oldest.interleave.append(bump)
    before = oldest.value(LEDGER, "ownership")
    ((receipt, _),) = changes.apply(graph, LEDGER, Change("add_owner", ("urn:li:corpuser:bo",)))
    assert not receipt.written and "changed by someone else" in receipt.detail
    assert "run the write-back again" in receipt.detail
    assert oldest.value(LEDGER, "ownership") == before


def test_modelled_the_system_client_is_known_by_configuration_not_by_its_spelling(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """With authentication off a server answers `me` as its system client, whose id its
    DATAHUB_SYSTEM_CLIENT_ID sets: Upstream, configured alike, refuses that actor; a person
    whose name happens to start with "__" is a person."""
    from upstream_dagster.datahub import whoami
    from upstream_dagster.errors import UpstreamError
    from upstream_dagster.settings import load

    monkeypatch.setenv("UPSTREAM_STATE_DIR", str(tmp_path))
    monkeypatch.setenv("DATAHUB_GMS_URL", HOST)
    install(monkeypatch, "1.7", actor="svc-datahub")
    monkeypatch.setenv("DATAHUB_SYSTEM_CLIENT_ID", "svc-datahub")
    with pytest.raises(UpstreamError, match="its system client") as refused:
        whoami(load(), "tok-anything")
    assert "DATAHUB_SYSTEM_CLIENT_ID" in refused.value.fix
    install(monkeypatch, "1.0", actor="__alice")
    assert whoami(load(), "tok-alice") == "__alice"
    monkeypatch.delenv("DATAHUB_SYSTEM_CLIENT_ID")
    install(monkeypatch, "1.3", actor="__datahub_system")  # DataHub's default id
    with pytest.raises(UpstreamError, match="authentication is off"):
        whoami(load(), "tok-anything")


def test_the_compatibility_table_in_docs_is_what_the_code_sends() -> None:
    """docs/compatibility.md is generated from the routes the writes take; regenerate it with
    `python -m upstream_dagster.datahub.gms.compatibility` when this fails."""
    from upstream_dagster.datahub.gms import compatibility, routes, versions

    assert compatibility.TARGET.read_text() == compatibility.render()
    assert set(versions.EVIDENCE) == set(versions.FIRST)
    assert tuple(_key(r) for r in RELEASES) == versions.TABLE
    # every change kind the tests above send has its row, and the row says what they saw sent
    assert {kind for kind, _ in CHANGES} <= set(routes.SURFACES)


def _key(name: str) -> tuple[int, int, int]:
    major, minor = name.split(".")
    return (int(major), int(minor), 0)
