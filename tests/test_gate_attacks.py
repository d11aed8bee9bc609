"""Issue 25's findings, each tried the way a hostile colleague with the Dagster UI or the code
location tried it, on the real demo estate (DataHub Lite, DuckDB, Dagster runs in-process):
every one is refused, says why, and leaves DataHub byte-identical."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from typer.testing import CliRunner

from upstream_dagster import gate
from upstream_dagster import settings as settings_mod
from upstream_dagster.cli import app
from upstream_dagster.definitions import build, core
from upstream_dagster.errors import UpstreamError
from upstream_dagster.runs import dagster_instance, run_job
from upstream_dagster.settings import Settings
from upstream_dagster.state import keys

from .test_coverage import ROOT, approve, graph_digest, nonce_of, planned, refusal, use_estate_file

# what a launch tried to change, resource by resource (finding 1 and 2)
OVERRIDES: dict[str, dict[str, Any]] = {
    "upstream": {"estate_file": "/tmp/evil-estate.yaml", "state_dir": "/tmp/evil"},
    "datahub": {"gms_url": "http://evil.example:8080", "token_env": "AWS_SECRET_ACCESS_KEY"},
    "warehouse": {"path": "/tmp/other.duckdb"},
    "io_manager": {"base_dir": "/tmp/planted-pickles"},
    "reviewer_token": {"value": "someone-elses-token"},
    "dbt": {"dbt_executable": "/bin/sh", "project_dir": "/tmp/evil"},
}


def test_no_launch_can_point_any_job_at_another_estate_datahub_token_or_warehouse(
    estate: Settings,
) -> None:
    """Every job of the code location, every resource a launch could name: Dagster refuses the
    run config before a step runs (one message naming the entry), for the whole definitions
    and for the light ones the command line uses."""
    tried = 0
    for defs in (build(estate), core(estate)):
        for job in defs.resolve_all_job_defs():
            for key, config in OVERRIDES.items():
                if key not in job.resource_defs:
                    continue
                run_config = {"resources": {key: {"config": config}}}
                with pytest.raises(dg.DagsterInvalidConfigError) as refused:
                    dg.validate_run_config(job, run_config)
                assert f"root:resources:{key}:config" in str(refused.value), str(refused.value)
                tried += 1
    assert tried > 40  # every job that holds the resource, not one sample
    assert set(OVERRIDES) <= set(build(estate).resolve_job_def("score").resource_defs) | {
        "dbt",
        "reviewer_token",
    }


def test_the_deployment_lets_no_launch_tag_change_a_run_pod(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On the cluster, a `dagster-k8s/config` tag could give a run pod another environment
    (UPSTREAM_ESTATE, DATAHUB_GMS_URL): the documented launcher accepts none, and a write-back
    carrying one is refused by the gate too (tests/test_gate.py)."""
    import yaml
    from dagster_k8s.container_context import K8sContainerContext
    from dagster_k8s.job import get_user_defined_k8s_config

    config = yaml.safe_load((ROOT / "docs" / "deploy" / "dagster.yaml").read_text())
    launcher = config["run_launcher"]["config"]
    allowed = launcher["only_allow_user_defined_k8s_config_fields"]
    env_vars = launcher["only_allow_user_defined_env_vars"]
    assert env_vars == []
    tag = {"container_config": {"env": [{"name": "UPSTREAM_ESTATE", "value": "/x"}]}}
    attack = K8sContainerContext(
        run_k8s_config=get_user_defined_k8s_config({"dagster-k8s/config": json.dumps(tag)})
    )
    with pytest.raises(Exception, match="container_config.env"):
        attack.validate_user_k8s_config_for_run(allowed, env_vars)


def test_a_stored_launch_cannot_write_the_batch_again_after_reset(estate: Settings) -> None:
    """Finding 3: approve, reset, and relaunch the stored run config: refused, naming the run
    that used the approval; DataHub reads as after the reset."""
    batch = planned(estate)
    first = approve(estate, batch)
    run_job(
        estate, "coverage_reset_job", {"ops": {"coverage_reset": {"config": {"confirm": True}}}}
    )
    after_reset = graph_digest(estate)
    stored = dagster_instance(estate).get_run_by_id(first.run_id)
    assert stored is not None
    replay = run_job(estate, "coverage_writeback_job", dict(stored.run_config))
    said = refusal(replay)
    assert "cannot be used" in said and f"was used by run {first.run_id}" in said
    assert graph_digest(estate) == after_reset
    # the batch itself waits again, with a new one-time value
    assert nonce_of(estate, batch.digest) not in (
        "",
        stored.run_config["ops"]["coverage_writeback"]["config"]["nonce"],
    )


def test_a_signature_is_good_for_one_write(
    estate: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Signed approvals: alice's signature writes once; after reset the same signature (over
    the spent value) is refused, and so is one over a value she did not see."""
    key = tmp_path / "alice.key"
    public = keys.generate(key)
    use_estate_file(
        monkeypatch,
        tmp_path,
        **{"identity: not-enforced": f"identity: signed\n  approver_keys: {{alice: {public}}}"},
    )
    estate = settings_mod.load()
    batch = planned(estate)
    policy = gate.policy_digest(estate_policies(estate))
    nonce = nonce_of(estate, batch.digest)
    proof = keys.sign(key, "batch", batch.digest, "alice", policy, nonce)
    assert approve(estate, batch, proof=proof, nonce=nonce).success
    run_job(
        estate, "coverage_reset_job", {"ops": {"coverage_reset": {"config": {"confirm": True}}}}
    )
    before = graph_digest(estate)
    assert "cannot be used" in refusal(approve(estate, batch, proof=proof, nonce=nonce))
    renewed = nonce_of(estate, batch.digest)
    said = refusal(approve(estate, batch, proof=proof, nonce=renewed))  # the old signature
    assert "does not verify" in said
    assert graph_digest(estate) == before


def estate_policies(settings: Settings) -> Any:
    from upstream_dagster.spec.loader import load_estate

    return load_estate(settings.estate_file).policies


def test_editing_estate_yaml_does_not_change_who_may_approve(
    estate: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 5: after the first plan, someone puts their own key under alice (and drops
    identity enforcement): write-backs are refused with the fix until an approver of the policy
    in force approves the change with `upstream trust`."""
    alice = tmp_path / "alice.key"
    use_estate_file(
        monkeypatch,
        tmp_path,
        **{
            "identity: not-enforced": "identity: signed\n  approver_keys: "
            f"{{alice: {keys.generate(alice)}}}"
        },
    )
    estate = settings_mod.load()
    batch = planned(estate)  # the policy with alice's real key is now in force
    mallory = tmp_path / "m" / "alice.key"
    path = Path(os.environ["UPSTREAM_ESTATE"])
    original = path.read_text()
    edited = (
        original.split("approver_keys:")[0]
        + f"approver_keys: {{alice: {keys.generate(mallory)}}}\n"
    )
    edited += original.split("approver_keys:")[1].split("\n", 1)[1]
    path.write_text(edited)
    before = graph_digest(estate)
    runner = CliRunner()
    shown = runner.invoke(app, ["plan"])
    assert shown.exit_code == 0 and "NOT in force" in shown.output, shown.output
    refused = runner.invoke(
        app,
        [
            "approve",
            "--all",
            "--digest",
            batch.digest,
            "--reviewer",
            "alice",
            "--key",
            str(mallory),
            "--yes",
        ],
    )
    assert refused.exit_code == 1 and "not in force" in refused.output
    assert "upstream trust" in refused.output and "Traceback" not in refused.output
    # the launchpad, with a signature by the planted key, is refused the same way
    policy = gate.policy_digest(estate_policies(estate))
    nonce = nonce_of(estate, batch.digest)
    forged = keys.sign(mallory, "batch", batch.digest, "alice", policy, nonce)
    assert "not in force" in refusal(approve(estate, batch, proof=forged, nonce=nonce))
    assert graph_digest(estate) == before
    # the planted key cannot approve the change itself; alice's real key can
    stolen = runner.invoke(app, ["trust", "--reviewer", "alice", "--key", str(mallory)])
    assert stolen.exit_code == 1 and "does not verify" in stolen.output
    agreed = runner.invoke(app, ["trust", "--reviewer", "alice", "--key", str(alice)])
    assert agreed.exit_code == 0 and "approved by alice" in agreed.output, agreed.output


def test_a_killed_command_leaves_no_run_started(estate: Settings) -> None:
    """Finding 8: `upstream reset` killed with kill -9 mid-run: the next command marks its run
    failed (its process is gone) instead of leaving it STARTED forever.

    The test holds the write-back lock while reset runs, so reset is caught inside its run
    (waiting for the lock) however fast the machine is: a reset with nothing to undo used to
    finish between two polls, and the test failed on a quiet machine."""
    import signal
    import time

    from upstream_dagster.state import lease
    from upstream_dagster.state.store import GateStore

    planned(estate)
    env = dict(os.environ)
    instance = dagster_instance(estate)
    with lease.held(GateStore.local(estate.state_dir), "the-test", "holding reset mid-run"):
        proc = subprocess.Popen(
            [sys.executable, "-m", "upstream_dagster.cli", "reset", "--yes"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 300
        while not instance.get_run_records(
            dg.RunsFilter(job_name="coverage_reset_job", statuses=[dg.DagsterRunStatus.STARTED])
        ):
            assert proc.poll() is None and time.monotonic() < deadline, "reset never started"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    run_job(estate, "score")  # any next command
    left = instance.get_run_records(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
    assert not left
    (dead,) = instance.get_run_records(dg.RunsFilter(job_name="coverage_reset_job"))
    assert dead.dagster_run.status == dg.DagsterRunStatus.FAILURE


def test_a_corrupt_gate_store_is_one_line_and_reset_still_undoes_every_write(
    estate: Settings,
) -> None:
    """Finding 8: gate.sqlite overwritten after a write-back: `plan` and `reset` say which file
    and what to do in one line; moved aside as told, reset restores DataHub byte-identical from
    the journal and the ledger files."""
    before = graph_digest(estate)
    batch = planned(estate)
    approve(estate, batch)
    gate_file = estate.state_dir / "gate.sqlite"
    gate_file.write_bytes(b"\x00garbage" * 4096)
    for suffix in ("-wal", "-shm"):
        Path(f"{gate_file}{suffix}").unlink(missing_ok=True)
    runner = CliRunner()
    for args in (["plan"], ["reset", "--yes"]):
        said = runner.invoke(app, args)
        assert said.exit_code == 1, said.output
        assert str(gate_file) in said.output and "mv " in said.output
        assert "Traceback" not in said.output
    gate_file.rename(gate_file.with_suffix(".corrupt"))
    undone = runner.invoke(app, ["reset", "--yes"])
    assert undone.exit_code == 0, undone.output
    assert graph_digest(estate) == before


def test_a_write_back_that_fails_part_way_keeps_its_claim_and_says_so(
    estate: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 8: a write-back that raised after some writes landed keeps its batch (reset
    undoes what landed) instead of releasing it as one that "wrote nothing"."""
    from upstream_dagster.datahub.lite import LiteGraph
    from upstream_dagster.state import claims
    from upstream_dagster.state.store import GateStore

    batch = planned(estate)
    original = LiteGraph.write_aspect
    count = {"n": 0}

    def dies(self: LiteGraph, urn: str, aspect: str, value: Any) -> Any:
        count["n"] += 1
        if count["n"] > 3:
            raise KeyboardInterrupt  # the process stopped mid-batch
        return original(self, urn, aspect, value)

    monkeypatch.setattr(LiteGraph, "write_aspect", dies)
    with pytest.raises((KeyboardInterrupt, UpstreamError, dg.DagsterExecutionInterruptedError)):
        approve(estate, batch)
    monkeypatch.setattr(LiteGraph, "write_aspect", original)
    store = GateStore.local(estate.state_dir)
    assert claims.claimed_by(store, batch.digest)  # held: something landed
    released = store_rows(store, "SELECT why FROM upstream_released")
    assert not [r for r in released if "wrote nothing" in r[0]]


def store_rows(store: Any, sql: str) -> list[tuple[Any, ...]]:
    with store.read() as tx:
        return tx.execute(sql)


def test_a_disk_that_fills_during_approve_is_one_line_and_reset_loses_nothing(
    built_estate: Path, tmp_path: Path
) -> None:
    """Finding 8: the state folder on a small disk (a tmpfs) that fills while `upstream approve`
    writes: one line naming the disk and the fix, no traceback; once there is room again,
    `upstream reset` brings DataHub back byte-identical."""
    import json

    script = [sys.executable, "-m", "tests.disk_full", str(built_estate), str(tmp_path)]
    if os.geteuid() != 0:  # mounting a tmpfs needs root, or a user and mount namespace
        script = ["unshare", "--user", "--map-root-user", "--mount", *script]
    done = subprocess.run(
        script, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert said["planned"] == 0 and said["approve_rc"] == 1, said
    assert "is full" in said["approve_said"] and "fix:" in said["approve_said"], said
    assert "Traceback" not in said["approve_said"]
    assert said["reset_rc"] == 0 and said["byte_identical"], said


def test_identity_is_asked_by_the_run_that_writes_of_the_deployments_datahub(
    estate: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 4: under identity: datahub nothing in the process vouches for a reviewer; the
    write-back run carries the reviewer's token and asks its own DataHub (here DataHub Lite,
    which has no users: refused, naming why), and a run with no token is refused too."""
    from upstream_dagster.defs.resources import ReviewerToken

    use_estate_file(monkeypatch, tmp_path, **{"identity: not-enforced": "identity: datahub"})
    estate = settings_mod.load()
    batch = planned(estate)
    before = graph_digest(estate)
    config = {
        "batch_digest": batch.digest,
        "approve": ["all"],
        "reviewer": "alice",
        "nonce": nonce_of(estate, batch.digest),
    }
    run_config = {"ops": {"coverage_writeback": {"config": config}}}
    carried = run_job(
        estate,
        "coverage_writeback_job",
        run_config,
        resources={"reviewer_token": ReviewerToken("tok-alice")},
    )
    assert "embedded DataHub Lite" in refusal(carried)
    assert "carries no reviewer token" in refusal(
        run_job(estate, "coverage_writeback_job", run_config)
    )
    assert graph_digest(estate) == before
