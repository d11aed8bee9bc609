"""The coverage controller: plan -> ratify -> actuate -> verify -> reset, on the real estate."""

from __future__ import annotations

import hashlib
import multiprocessing
import re
import sqlite3
import threading
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from upstream_dagster import runs as runs_mod
from upstream_dagster import settings as settings_mod
from upstream_dagster.conformance.plan import Plan
from upstream_dagster.datahub.changes import apply as write_change
from upstream_dagster.datahub.changes import restore
from upstream_dagster.datahub.lite import LiteGraph
from upstream_dagster.datahub.model import PreImage
from upstream_dagster.errors import UpstreamError
from upstream_dagster.runs import run_job
from upstream_dagster.settings import Settings
from upstream_dagster.state import approvals
from upstream_dagster.state import claims as gate
from upstream_dagster.state.store import GateStore

ROOT = Path(__file__).resolve().parent.parent


def graph_digest(settings: Settings) -> str:
    """Every latest aspect's content, and how many versions exist: any write changes it."""
    con = sqlite3.connect(str(settings.lite_file))
    rows = con.execute(
        "SELECT urn, aspect_name, metadata FROM metadata_aspect_v2 "
        "WHERE version = 0 ORDER BY urn, aspect_name"
    ).fetchall()
    (versions,) = con.execute("SELECT count(*) FROM metadata_aspect_v2").fetchone()
    con.close()
    return hashlib.sha256(repr((rows, versions)).encode()).hexdigest()


def planned(settings: Settings) -> Plan:
    batch = run_job(settings, "score").output_for_node("proposals")
    assert isinstance(batch, Plan) and batch.proposals
    return batch


def store(settings: Settings) -> GateStore:
    return GateStore.local(settings.state_dir)


def nonce_of(settings: Settings, digest: str) -> str:
    """The one-time value waiting for ``digest`` ("" when none is)."""
    held = approvals.outstanding(store(settings), "batch", digest)
    return held.nonce if held else ""


def approve(
    settings: Settings, batch: Plan, tags: dict[str, str] | None = None, **overrides: Any
) -> dg.ExecuteInProcessResult:
    """A launch as the launchpad makes it, with the one-time value shown beside the digest."""
    config = {
        "batch_digest": batch.digest,
        "approve": ["all"],
        "reviewer": "alice",
        "nonce": nonce_of(settings, batch.digest),
        **overrides,
    }
    return run_job(
        settings,
        "coverage_writeback_job",
        {"ops": {"coverage_writeback": {"config": config}}},
        tags=tags,
    )


def use_estate_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **replace: str) -> None:
    text = (ROOT / "estate.yaml").read_text()
    for old, new in replace.items():
        text = text.replace(old, new)
    path = tmp_path / "estate.yaml"
    path.write_text(text)
    monkeypatch.setenv("UPSTREAM_ESTATE", str(path))


def test_full_loop_measured_equals_projected_and_reset_restores(estate: Settings) -> None:
    before = graph_digest(estate)
    batch = planned(estate)
    assert batch.projected.overall.percent > batch.base.overall.percent
    assert all(p.price and p.evidence for p in batch.proposals)  # nothing reaches a person unpriced
    result = approve(estate, batch)
    meta = result.asset_materializations_for_node("coverage_writeback")[0].metadata
    assert meta["failed"].value == 0 and meta["written"].value >= len(batch.proposals)
    # a proposed assertion is a check that runs: each one written has a result in DataHub
    proposed = [p for p in batch.proposals if p.change.kind == "add_assertions"]
    assert proposed, "the demo batch proposes assertions"
    con = sqlite3.connect(str(estate.lite_file))
    ran = dict(
        con.execute(
            "SELECT i.urn, count(r.urn) FROM metadata_aspect_v2 i LEFT JOIN metadata_aspect_v2 r "
            "ON r.urn = i.urn AND r.aspect_name = 'assertionRunEvent' AND r.version = 0 "
            "WHERE i.aspect_name = 'assertionInfo' AND i.version = 0 "
            "AND i.metadata LIKE '%upstream_template%' GROUP BY i.urn"
        ).fetchall()
    )
    con.close()
    assert len(ran) == sum(len(p.change.values) for p in proposed)
    assert all(ran.values()), "an assertion was written that nothing ran"
    verify = run_job(estate, "coverage_verify_job")
    (check,) = verify.get_asset_check_evaluations()
    assert check.passed, check.metadata
    assert check.metadata["measured"].value == batch.projected.overall.percent
    run_job(
        estate, "coverage_reset_job", {"ops": {"coverage_reset": {"config": {"confirm": True}}}}
    )
    after = planned(estate)
    assert after.base.overall.percent == batch.base.overall.percent
    assert after.digest == batch.digest  # the graph reads exactly as before the batch
    # every aspect the batch wrote was absent before, so Lite reads byte-identical again
    assert graph_digest(estate) == before
    # the gate cannot wedge: the undone batch waits again and can be approved again
    assert gate.claimed_by(store(estate), batch.digest) is None
    queue = run_job(estate, "score").output_for_node("approval_queue")
    assert any(batch.digest in line for line in queue)
    again = approve(estate, after)
    meta = again.asset_materializations_for_node("coverage_writeback")[0].metadata
    assert meta["failed"].value == 0 and meta["written"].value >= len(batch.proposals)
    run_job(
        estate, "coverage_reset_job", {"ops": {"coverage_reset": {"config": {"confirm": True}}}}
    )
    assert graph_digest(estate) == before  # the second write was undone too, exactly


def test_write_back_cannot_run_without_an_approval(estate: Settings) -> None:
    planned(estate)
    before = graph_digest(estate)
    with pytest.raises(dg.DagsterInvalidConfigError, match="batch_digest|reviewer|approve"):
        from upstream_dagster.definitions import build
        from upstream_dagster.runs import dagster_instance

        build(estate).resolve_job_def("coverage_writeback_job").execute_in_process(
            instance=dagster_instance(estate)
        )
    assert graph_digest(estate) == before


def refusal(result: dg.ExecuteInProcessResult) -> str:
    """A refused launch is an answer, not a failed run: green, nothing written, and why."""
    assert result.success
    meta = result.asset_materializations_for_node("coverage_writeback")[0].metadata
    assert meta["refused"].value is True and meta["written"].value == 0 and meta["fix"].value
    return str(meta["result"].value)


def test_stale_digest_and_non_approvers_leave_the_graph_byte_identical(estate: Settings) -> None:
    batch = planned(estate)
    before = graph_digest(estate)
    assert "stale batch digest" in refusal(approve(estate, batch, batch_digest="0" * 16))
    assert "not an approver" in refusal(approve(estate, batch, reviewer="mallory"))
    with pytest.raises(UpstreamError, match="not an approver"):  # the typed API still raises
        runs_mod.approve_batch(estate, batch.digest, ["all"], "mallory")
    assert graph_digest(estate) == before


def test_dry_run_cannot_be_talked_into_writing(
    estate: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_estate_file(monkeypatch, tmp_path, **{"actuation: ratify": "actuation: dry-run"})
    estate = settings_mod.load()
    assert settings_mod.load().estate_file.parent == tmp_path
    batch = planned(estate)
    before = graph_digest(estate)
    # approve everything, as an approver, and claim to be the automatic sensor
    result = approve(estate, batch, tags={"upstream/automatic": "true", "upstream/policy": "auto"})
    meta = result.asset_materializations_for_node("coverage_writeback")[0].metadata
    assert meta["written"].value == 0 and "nothing was written" in meta["result"].value
    assert graph_digest(estate) == before


def test_a_ratify_estate_refuses_launches_that_claim_to_be_automatic(estate: Settings) -> None:
    batch = planned(estate)
    before = graph_digest(estate)
    said = refusal(approve(estate, batch, tags={"upstream/automatic": "true"}))
    assert "only a person on the approvers list" in said
    assert graph_digest(estate) == before


def test_a_second_approval_of_the_same_batch_is_refused(estate: Settings) -> None:
    batch = planned(estate)
    first = approve(estate, batch)
    digest_after = graph_digest(estate)
    with pytest.raises(UpstreamError) as err:
        approve(estate, batch)
    # refused before any write, naming the run that wrote the batch
    assert f"already written by run {first.run_id}" in err.value.problem
    with pytest.raises(gate.BatchRefused, match=first.run_id):
        gate.claim(store(estate), batch.digest, "another-run", "alice")
    assert graph_digest(estate) == digest_after


def _claim_in_process(state: str, digest: str, name: str, out: Any) -> None:
    try:
        gate.claim(GateStore.local(Path(state)), digest, name, "alice")
        out.put(name)
    except gate.BatchRefused:
        out.put(None)


@pytest.mark.slow
def test_concurrent_claims_in_threads_and_processes_let_exactly_one_write(tmp_path: Path) -> None:
    winners: list[str] = []
    refused: list[str] = []

    def contend(name: str) -> None:
        try:
            gate.claim(GateStore.local(tmp_path), "threads", name, "alice")
            winners.append(name)
        except gate.BatchRefused:
            refused.append(name)

    threads = [threading.Thread(target=contend, args=(f"t{i}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(winners) == 1
    # every contender got an answer (a crash, e.g. "database is locked", is neither)
    assert len(refused) == len(threads) - 1
    queue: Any = multiprocessing.get_context("spawn").Queue()
    procs = [
        multiprocessing.get_context("spawn").Process(
            target=_claim_in_process, args=(str(tmp_path), "procs", f"p{i}", queue)
        )
        for i in range(4)
    ]
    for p in procs:
        p.start()
    # each answer first (a spawned interpreter can take minutes to start on a loaded
    # machine), then the processes: the limits only end a hang
    results = [queue.get(timeout=900) for _ in procs]
    for p in procs:
        p.join(60)
    assert len([r for r in results if r]) == 1


def test_a_failing_writer_gives_a_partial_result_and_landed_writes_undo(
    estate: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    batch = planned(estate)
    original = LiteGraph.write_aspect

    def flaky(self: LiteGraph, urn: str, aspect: str, value: Any) -> Any:
        if aspect == "domains":
            raise OSError("disk full (injected)")
        return original(self, urn, aspect, value)

    monkeypatch.setattr(LiteGraph, "write_aspect", flaky)
    result = approve(estate, batch)
    meta = result.asset_materializations_for_node("coverage_writeback")[0].metadata
    assert meta["partial"].value and meta["failed"].value > 0 and meta["written"].value > 0
    assert "disk full" in meta["receipts"].value
    monkeypatch.setattr(LiteGraph, "write_aspect", original)
    run_job(
        estate, "coverage_reset_job", {"ops": {"coverage_reset": {"config": {"confirm": True}}}}
    )
    assert planned(estate).base.overall.percent == batch.base.overall.percent


def test_a_write_back_that_wrote_nothing_does_not_hold_the_batch(
    estate: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A locked DataHub, say: every write fails. Nothing landed, so the claim is released and
    the same batch can be approved once DataHub answers again."""
    batch = planned(estate)
    original_write, original_apply = LiteGraph.write_aspect, LiteGraph.apply_change

    def locked(self: LiteGraph, *args: Any) -> Any:
        raise OSError("database is locked (injected)")

    monkeypatch.setattr(LiteGraph, "write_aspect", locked)
    monkeypatch.setattr(LiteGraph, "apply_change", locked)
    first = approve(estate, batch)
    meta = first.asset_materializations_for_node("coverage_writeback")[0].metadata
    assert meta["written"].value == 0 and meta["failed"].value > 0
    assert gate.claimed_by(store(estate), batch.digest) is None
    monkeypatch.setattr(LiteGraph, "write_aspect", original_write)
    monkeypatch.setattr(LiteGraph, "apply_change", original_apply)
    second = approve(estate, batch)
    meta = second.asset_materializations_for_node("coverage_writeback")[0].metadata
    assert meta["failed"].value == 0 and meta["written"].value >= len(batch.proposals)


def test_rejecting_the_whole_batch_leaves_the_graph_byte_identical(estate: Settings) -> None:
    batch = planned(estate)
    before = graph_digest(estate)
    approve(
        estate, batch, approve=[], reject=[p.id for p in batch.proposals], reject_reason="not now"
    )
    assert graph_digest(estate) == before
    again = run_job(estate, "score").output_for_node("proposals")
    assert not {p.id for p in again.proposals} & {p.id for p in batch.proposals}


def test_a_rejected_proposal_does_not_come_back(estate: Settings) -> None:
    batch = planned(estate)
    victim = batch.proposals[0]
    approve(
        estate,
        batch,
        approve=[batch.proposals[1].id],
        reject=[victim.id],
        reject_reason="wrong owner",
    )
    again = planned(estate)
    assert victim.id not in {p.id for p in again.proposals}
    assert any(u.asset == victim.asset and "rejected" in u.reason for u in again.unfixable)


def test_verify_fails_when_datahub_differs_from_the_projection(estate: Settings) -> None:
    batch = planned(estate)
    approve(estate, batch)
    graph = LiteGraph(estate.lite_file)
    try:  # someone removes one of the owners Upstream just wrote
        target = next(p for p in batch.proposals if p.change.kind == "add_owner")
        graph.delete_aspect(target.asset, "ownership")
    finally:
        graph.close()
    verify = run_job(estate, "coverage_verify_job")
    (check,) = verify.get_asset_check_evaluations()
    assert not check.passed and check.metadata["difference"].value < 0


@pytest.fixture(scope="module")
def planned_estate(
    built_estate: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Plan]:
    import os
    import shutil

    from upstream_dagster import settings as settings_mod

    state = tmp_path_factory.mktemp("undo") / "state"
    shutil.copytree(built_estate, state, ignore=shutil.ignore_patterns("dagster_home"))
    os.environ["UPSTREAM_STATE_DIR"] = str(state)
    try:
        batch = run_job(settings_mod.load(), "score").output_for_node("proposals")
    finally:
        os.environ["UPSTREAM_STATE_DIR"] = str(built_estate)
    return state, batch


def _latest(graph: LiteGraph, urns: list[str], aspects: list[str]) -> dict[str, Any]:
    return graph.get_aspects(urns, aspects)


@hsettings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_reset_restores_every_aspect_for_any_subset_of_proposals(
    planned_estate: tuple[Path, Plan], data: st.DataObject
) -> None:
    state, batch = planned_estate
    chosen = data.draw(
        st.lists(st.sampled_from(batch.proposals), unique_by=lambda p: p.id, min_size=1, max_size=8)
    )
    graph = LiteGraph(state / "datahub-lite.sqlite")
    try:
        written: list[PreImage] = []
        for p in chosen:
            for receipt, pre in write_change(graph, p.asset, p.change):
                assert receipt.written, receipt
                written.append(pre)
        touched = sorted({(pre.urn, pre.aspect) for pre in written})
        for pre in reversed(written):
            assert restore(graph, pre).urn == pre.urn
        for urn, aspect in touched:
            now = graph.get_aspects([urn], [aspect]).get(urn, {}).get(aspect)
            first = next(pre for pre in written if (pre.urn, pre.aspect) == (urn, aspect))
            assert now == first.value, (urn, aspect)
    finally:
        graph.close()


def tick(settings: Settings) -> Any:
    """One evaluation of the auto-approval sensor against the estate's Dagster instance."""
    from upstream_dagster.definitions import build
    from upstream_dagster.runs import dagster_instance

    defs = build(settings)
    sensor = defs.resolve_sensor_def("auto_writeback")
    context = dg.build_sensor_context(
        instance=dagster_instance(settings), definitions=defs, resources=defs.resources
    )
    return sensor.evaluate_tick(context)


def test_auto_policy_sensor_launches_once_and_risky_proposals_wait(
    estate: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    limit = 0.33  # inside the demo batch's risk range, so both sides are exercised
    use_estate_file(
        monkeypatch,
        tmp_path,
        **{"actuation: ratify": "actuation: auto", "max_auto_risk: 0.3": f"max_auto_risk: {limit}"},
    )
    estate = settings_mod.load()
    batch = planned(estate)
    (request,) = tick(estate).run_requests
    assert request.run_key == f"auto-{batch.digest}-{nonce_of(estate, batch.digest)}"
    result = run_job(estate, "coverage_writeback_job", request.run_config, tags=request.tags)
    meta = result.asset_materializations_for_node("coverage_writeback")[0].metadata
    journal = meta["journal"].value
    assert journal["automatic"] is True and journal["reviewer"] == "upstream-auto"
    written = {p.id for p in batch.proposals if p.id in journal["approved"]}
    assert written and all(p.risk <= limit for p in batch.proposals if p.id in written)
    assert any(p.risk > limit for p in batch.proposals), "some proposals must wait for a person"
    # the next tick launches nothing: the batch was written
    data = tick(estate)
    assert not data.run_requests and "already written" in (data.skip_message or "")


def test_the_sensor_launches_nothing_under_ratify(estate: Settings) -> None:
    planned(estate)
    data = tick(estate)
    assert not data.run_requests and "a person approves" in (data.skip_message or "")


def test_the_cli_approves_only_the_batch_it_showed_and_refuses_before_launching(
    estate: Settings,
) -> None:
    """A reviewer not on the list gets one line with the fix, nothing is launched, nothing is
    asked; a missing or stale digest is refused the same way."""
    import os
    import re
    import subprocess
    import sys

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "upstream_dagster.cli", *args],
            cwd=ROOT,
            env=dict(os.environ),
            capture_output=True,
            text=True,
            timeout=600,
        )

    def runs() -> int:
        home = estate.dagster_home
        return (
            len(dg.DagsterInstance.from_config(str(home)).get_run_records()) if home.exists() else 0
        )

    runs_before = runs()
    shown = cli("plan")
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert not shown.stderr and runs() == runs_before  # a read: no run, nothing on stderr
    # the batch is an aligned table under a header, the biggest gain first, and a line says
    # why the gains are equal; every proposal's evidence under it
    lines = shown.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:3] == ["id", "gain", "risk"])
    assert "alike: +0.47 points each" in lines[header - 1]
    rows = [line for line in lines[header + 1 :] if line.startswith("  p-")]
    assert len(rows) == 40
    column = lines[header].index("requirement")
    assert {row[column - 2 : column] for row in rows} == {"  "}  # one column, one place
    risks = [float(row.split()[2]) for row in rows]
    assert risks == sorted(risks, reverse=True)  # equal gains: the riskiest first
    assert lines[header + 2].startswith("      evidence: ")
    # every violation that stays is printed with its reason, and what each rule found
    assert "violations stay, each with its reason below" in shown.stdout
    assert re.search(
        r"^  require_owner +int_shipment_times \(dbt\) +owners: the lineage rule splits "
        r"evenly between bob, carol",
        shown.stdout,
        re.M,
    )
    assert re.search(r"^ +lineage: stg_orders \(dbt\) \(upstream\): bob", shown.stdout, re.M)
    assert re.search(r"^descriptions: 28 documented -> \d+, 0 generated -> 0", shown.stdout, re.M)
    found = re.search(r"^batch (\w+):", shown.stdout, re.M)
    assert found and f"--digest {found[1]}" in shown.stdout
    digest = found[1]

    for args, says in (
        (("--digest", digest, "--reviewer", "mallory"), "'mallory' is not an approver"),
        (("--reviewer", "alice"), "approve needs the digest of the batch you read"),
        (("--digest", "0000000000000000", "--reviewer", "alice"), "not what the graph plans now"),
        (("--digest", digest.upper(), "--reviewer", "alice"), "is not a batch digest"),
        (("--digest", f" {digest}", "--reviewer", "alice"), "is not a batch digest"),
        (("--digest", digest, "--ids", "p-x", "--reviewer", "alice"), "--all and --ids both"),
    ):
        refused = cli("approve", "--all", *args)  # no --yes: a refusal must not ask first
        assert refused.returncode == 1
        assert says in refused.stderr and "Traceback" not in refused.stderr + refused.stdout
        assert "fix:" in refused.stderr and "?" not in refused.stdout
    # ids the plan never showed are refused before anything is shown or launched
    ids = ("--ids", "p-0000000000", "--ids", "'; drop")
    refused = cli("approve", *ids, "--digest", digest, "--reviewer", "alice", "--yes")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr + refused.stdout
    assert f"batch {digest} has no proposal 'p-0000000000', \"'; drop\"" in refused.stderr
    assert "you approve" not in refused.stdout
    assert runs() == runs_before  # nothing was launched

    approved = cli("approve", "--all", "--digest", digest, "--reviewer", "alice", "--yes")
    assert approved.returncode == 0, approved.stderr[-2000:]
    # the batch read was recorded first, by the score job; piped, each step is a timestamped line
    progress = approved.stderr.splitlines()
    assert all(re.match(r"\d\d:\d\d:\d\d ", line) for line in progress), progress
    assert "recording the batch you read (the score job)..." in progress[0], progress
    assert any(line.endswith("  step proposals") for line in progress), progress
    instance = dg.DagsterInstance.from_config(str(estate.dagster_home))
    # it showed what it writes as the plan's table, not raw Markdown
    assert "projected" in approved.stdout and "|" not in approved.stdout
    assert len(re.findall(r"^  p-\w+ +\+0\.47 ", approved.stdout, re.M)) == 40
    written = instance.get_latest_materialization_event(dg.AssetKey("coverage_writeback"))
    assert written is not None
    tags = instance.get_run_by_id(written.run_id).tags  # type: ignore[union-attr]
    assert (tags["upstream/reviewer"], tags["upstream/batch"]) == ("alice", digest)
    assert (tags["upstream/launched-by"], tags["upstream/gate"]) == ("cli", "write")
    again = cli("approve", "--all", "--digest", digest, "--reviewer", "alice", "--yes")
    assert again.returncode == 1 and f"batch {digest} was already written by run" in again.stderr
    queued = cli("queue")  # the written batch no longer waits on a person
    assert f"batch {digest} was written by run {written.run_id}" in queued.stdout, queued.stdout
    assert f"- coverage batch {digest}" not in queued.stdout


def test_a_write_back_killed_at_random_points_leaves_nothing_undoable_or_wedged(
    estate: Settings,
) -> None:
    """kill -9 the approving process part-way through its writes (seeded points), then: the
    next approval completes (no dead claim, no held pool slot), and one reset brings DataHub
    back byte-identical: every write the dead process made was journaled before it was made."""
    import os
    import random
    import re
    import signal
    import subprocess
    import sys
    import time

    env = dict(os.environ)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "upstream_dagster.cli", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return done

    def digest_of(text: str) -> str:
        found = re.search(r"^batch (\w+):", text, re.M)
        assert found, text
        return found[1]

    def ledger_rows() -> int:
        path = estate.state_dir / "gate.sqlite"
        if not path.exists():
            return 0
        con = sqlite3.connect(str(path), timeout=30)
        try:
            return int(con.execute("SELECT count(*) FROM upstream_ledger").fetchone()[0])
        except sqlite3.OperationalError:
            return 0
        finally:
            con.close()

    before = graph_digest(estate)
    first = digest_of(cli("plan").stdout)
    total = len(planned(estate).proposals)
    for point in random.Random(20).sample(range(1, total - 1), 2):
        start = ledger_rows()
        proc = subprocess.Popen(
            [sys.executable, "-m", "upstream_dagster.cli", "approve", "--all", "--digest",
             digest_of(cli("plan").stdout), "--reviewer", "alice", "--yes"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 300
        while ledger_rows() < start + point and proc.poll() is None:
            assert time.monotonic() < deadline, "the write-back never started writing"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    # verify says a write-back died part-way, not that none was made, and what undoes it
    verified = subprocess.run(
        [sys.executable, "-m", "upstream_dagster.cli", "verify"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert verified.returncode == 1, verified.stdout
    assert "stopped part-way" in verified.stderr and "upstream reset --batch" in verified.stderr
    queued = cli("queue").stdout  # the dead write-back waits on a person, with what undoes it
    assert "its write-back (run" in queued and "has not finished" in queued, queued
    # the graph moved under the dead runs: a new plan, and its approval completes
    again = digest_of(cli("plan").stdout)
    assert again != first
    cli("approve", "--all", "--digest", again, "--reviewer", "alice", "--yes")
    cli("reset", "--yes")
    assert graph_digest(estate) == before
    assert digest_of(cli("plan").stdout) == first  # the estate plans as it did at the start
    undone = subprocess.run(
        [sys.executable, "-m", "upstream_dagster.cli", "verify"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert undone.returncode == 1 and "a reset undid every write-back" in undone.stderr


def test_approve_refuses_before_any_run_what_it_cannot_write_as_shown(
    estate: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by a blind attack session: a digest a run had recorded, approved after the graph
    planned another batch, launched a write-back that failed its check ("the graph changed");
    an id both approved and rejected was shown as written and then rejected; a policy not in
    force was refused only after a score run. Each is now one line before anything runs, and
    a launchpad run whose nonce is left blank (YAML null) is the gate's refusal, not a
    validation traceback."""
    from typer.testing import CliRunner

    from upstream_dagster.cli import app

    runner = CliRunner()

    def runs() -> int:
        return len(dg.DagsterInstance.from_config(str(estate.dagster_home)).get_run_records())

    recorded = runner.invoke(app, ["plan", "--record"])
    digest = re.search(r"^batch (\w+):", recorded.output, re.M)
    assert recorded.exit_code == 0 and digest, recorded.output
    batch = planned(estate)
    before, started = graph_digest(estate), runs()
    (first, second) = (batch.proposals[0].id, batch.proposals[1].id)
    both = ["--ids", first, "--ids", second, "--reject", second]
    refused = runner.invoke(app, ["approve", *both, "--digest", digest[1], "--reviewer", "alice"])
    assert refused.exit_code == 1 and f"'{second}' both approved and rejected" in refused.output
    # a rejection needs its reason; with one, what is shown is what would be written
    bare = ["approve", "--all", "--reject", first, "--digest", digest[1], "--reviewer", "alice"]
    assert "needs its reason" in runner.invoke(app, bare).output
    asked = runner.invoke(app, [*bare, "--reason", "not ours"], input="n\n")
    assert asked.exit_code == 1 and f"and reject {first} (not proposed again)" in asked.output
    assert f"  {first} " not in asked.output and "you approve 39 of its proposals" in asked.output
    assert "Write 39 proposals of batch" in asked.output and "nothing was written" in asked.output
    # estate.yaml asks one more assertion of tier-1: the graph plans another batch now
    use_estate_file(monkeypatch, tmp_path, **{"min_assertions: 2": "min_assertions: 3"})
    stale = runner.invoke(app, ["approve", "--all", "--digest", digest[1], "--reviewer", "alice"])
    assert stale.exit_code == 1 and "is not what the graph plans now" in stale.output
    assert "Traceback" not in stale.output and "?" not in stale.output  # nothing was asked
    # who may approve changed in the file, not in force: refused before a score run
    use_estate_file(monkeypatch, tmp_path, **{"approvers: [": "approvers: [mallory, "})
    unproven = runner.invoke(
        app, ["approve", "--all", "--digest", digest[1], "--reviewer", "mallory"]
    )
    assert unproven.exit_code == 1 and "is not in force" in unproven.output, unproven.output
    assert runs() == started and graph_digest(estate) == before
    # the launchpad with the one-time value left blank: refused by the gate, saying so
    monkeypatch.delenv("UPSTREAM_ESTATE")
    blank = approve(estate, batch, nonce=None)
    assert "carries no one-time value" in refusal(blank)
    assert graph_digest(estate) == before


def test_datahub_identity_refuses_a_launchpad_run_and_lite_names_the_fix(
    estate: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """identity: datahub. A launchpad run carries no token, so it is refused (green, with the
    fix) and writes nothing; on the embedded DataHub Lite the command line says DataHub Lite has
    no users before it launches anything."""
    from typer.testing import CliRunner

    from upstream_dagster.cli import app

    use_estate_file(monkeypatch, tmp_path, **{"identity: not-enforced": "identity: datahub"})
    estate = settings_mod.load()
    batch = planned(estate)
    before = graph_digest(estate)
    said = refusal(approve(estate, batch))
    assert "carries no reviewer token" in said and "launchpad run carries none" in said
    runs_before = len(dg.DagsterInstance.from_config(str(estate.dagster_home)).get_run_records())
    monkeypatch.setenv("DATAHUB_REVIEWER_TOKEN", "tok-alice")
    out = CliRunner().invoke(
        app, ["approve", "--all", "--digest", batch.digest, "--reviewer", "alice", "--yes"]
    )
    assert out.exit_code == 1 and "embedded DataHub Lite" in out.output
    assert "tok-alice" not in out.output and "Traceback" not in out.output
    instance = dg.DagsterInstance.from_config(str(estate.dagster_home))
    assert len(instance.get_run_records()) == runs_before  # refused before launching
    assert graph_digest(estate) == before


def test_verify_before_any_write_back_is_one_line_not_a_failed_run(estate: Settings) -> None:
    """`upstream verify` on an estate nothing was written to printed a Dagster STEP_FAILURE and
    a traceback; it is an answer: one line with the fix, and no run launched."""
    from typer.testing import CliRunner

    from upstream_dagster.cli import app

    def launched() -> int:
        home = estate.dagster_home
        return (
            len(dg.DagsterInstance.from_config(str(home)).get_run_records()) if home.is_dir() else 0
        )

    runs_before = launched()
    out = CliRunner().invoke(app, ["verify"])
    assert out.exit_code == 1 and "nothing to verify" in out.output and "fix:" in out.output
    assert "Traceback" not in out.output and "STEP_FAILURE" not in out.output
    assert launched() == runs_before
