"""The random suites' faults that fire no check, before and after the detection proposals.

    python -m upstream_dagster.evaluation.bench.detection [--random 20] [--seed 51]

On a copy of the built estate's state folder (the estate's own is never touched): the random
suites' draw (`upstream eval --random N --seed S`, `evaluation.draw`) is tried fault by fault on
a sandbox copy, as `upstream detect` tries its own (each fault, then what is downstream built
with its dbt tests, the monitors and the assertions Upstream runs), and the share of faults
that fire no check is printed. Then estate.yaml is asked for `min_fault_detection` on every
tier (a copy; tiers that ask already keep their share), `upstream detect` measures it, the score
job plans, every detection proposal is approved and written, and the same draw is tried again.
The random suites grade what fired; a fault nothing fires on is the gap these proposals close.
Per tier it prints detection as measured, as projected by the plan, as measured again after the
write-back (the verify job's check: projected == measured), and after `reset` (restored).
Its first approver approves; the estate must not ask for a key (`identity: not-enforced`), as
the demo's and the second estate's do.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from upstream_dagster import settings as settings_mod
from upstream_dagster.conformance.detection import detection_results
from upstream_dagster.conformance.requirements import CheckResult
from upstream_dagster.errors import UpstreamError
from upstream_dagster.evaluation.detect import Bench, _planned, run_detection
from upstream_dagster.evaluation.detect_draw import describe
from upstream_dagster.evaluation.draw import draw
from upstream_dagster.evaluation.estate_model import read_estate
from upstream_dagster.evaluation.scenario import Fault
from upstream_dagster.settings import Settings
from upstream_dagster.spec.loader import load_estate
from upstream_dagster.warehouse.dbt_project import DbtProject
from upstream_dagster.warehouse.sandbox import sandbox_copy

# what the copy leaves out: Dagster's instance (made anew), sandboxes, records, other estates
_SKIP = ("dagster_home", "sandboxes", "records", "bench", "eval-base", "subscriptions")


def missed(settings: Settings, faults: list[Fault]) -> tuple[int, int, list[str]]:
    """(faults no check caught, faults tried, those faults) on a fresh sandbox of
    ``settings``' estate."""
    spec = load_estate(settings.estate_file)
    _, _, watch = _planned(settings, spec)
    with tempfile.TemporaryDirectory(dir=settings.state_dir) as folder:
        bench = Bench(
            sandbox_copy(DbtProject.of(settings), Path(folder)), spec, watch, Path(folder)
        )
        bench.prepare()
        tried, quiet = 0, []
        for fault in faults:
            try:
                caught = bench.trial(fault)
            except UpstreamError:
                continue  # a fault this estate cannot take is no measurement
            tried += 1
            quiet += [] if caught else [describe(fault)]
    return len(quiet), tried, quiet


def _asking(estate: Path, out: Path, share: float, per_tier: int | None = None) -> None:
    """``estate`` with min_fault_detection on every tier (kept where a tier sets it) and no cap
    on a batch's proposals."""
    body: dict[str, Any] = yaml.safe_load(estate.read_text())
    for tier in body["tiers"]:
        tier["requirements"].setdefault("min_fault_detection", share)
    # one batch holds every priced proposal: the bench approves all the detection ones at once
    # (a team would approve them over several nightly batches)
    body.setdefault("policies", {})["max_proposals_per_run"] = 1000
    if per_tier is not None:  # a larger draw tries more of each tier's assets and columns
        policy = body["policies"].setdefault("detection", {})
        policy["faults_per_tier"] = per_tier
        policy["max_seconds"] = max(float(policy.get("max_seconds", 600)), 30.0 * per_tier * 4)
    out.write_text(yaml.safe_dump(body, sort_keys=False))


def approve_detection(settings: Settings, reviewer: str = "alice") -> list[str]:
    """Plan (the score job) and approve every detection proposal, as ``reviewer`` would."""
    from upstream_dagster.runs import run_job
    from upstream_dagster.state import approvals
    from upstream_dagster.state.store import GateStore

    batch = run_job(settings, "score").output_for_node("proposals")
    chosen = [p for p in batch.proposals if p.requirement == "min_fault_detection"]
    if not chosen:
        return []
    held = approvals.outstanding(GateStore.local(settings.state_dir), "batch", batch.digest)
    config = {
        "batch_digest": batch.digest,
        "approve": [p.id for p in chosen],
        "reviewer": reviewer,
        "nonce": held.nonce if held else "",
    }
    run_job(settings, "coverage_writeback_job", {"ops": {"coverage_writeback": {"config": config}}})
    return [f"{batch.display(p.asset)}: {', '.join(p.change.values)}" for p in chosen]


Tiers = dict[str, tuple[int, int, list[str]]]  # tier: (caught, tried, the faults missed)


def per_tier(results: Sequence[CheckResult]) -> Tiers:
    """Detection as the dial reads it, summed per tier, with the faults no check caught."""
    out: Tiers = {}
    for r in detection_results(results):
        caught, tried, missed = out.get(r.tier, (0, 0, []))
        lost = [e.removeprefix("missed: ") for e in r.evidence if e.startswith("missed: ")]
        out[r.tier] = (caught + len(r.evidence) - len(lost), tried + len(r.evidence), missed + lost)
    return out


def _dial(settings: Settings, found: Any) -> Any:
    from upstream_dagster import clock
    from upstream_dagster.datahub import Target, connected
    from upstream_dagster.services.scoring import read_and_score

    with connected(Target.of(settings)) as graph:
        return read_and_score(graph, load_estate(settings.estate_file), clock.now_ms(), found)


def _tier_lines(label: str, tiers: Tiers, names: bool = False) -> list[str]:
    out = []
    for tier, (caught, tried, missed) in sorted(tiers.items()):
        out.append(f"  {tier}, {label}: caught {caught} of {tried}")
        out += [f"    slipped through: {m}" for m in missed] if names else []
    return out


def main(argv: list[str] | None = None) -> None:
    from upstream_dagster.runs import run_job

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--random", type=int, default=20, help="faults in the draw")
    parser.add_argument("--seed", type=int, default=51, help="the random suite's seed")
    parser.add_argument("--share", type=float, default=0.8, help="min_fault_detection asked")
    parser.add_argument(
        "--faults-per-tier",
        type=int,
        default=None,
        help="the detection draw's size per tier (default: the estate's policies.detection)",
    )
    parser.add_argument(
        "--clean-base",
        action="store_true",
        help="measure on the evaluation's clean build (pinned clock; built once if missing) "
        "instead of the state folder's own estate",
    )
    args = parser.parse_args(argv)
    base = settings_mod.load()
    if args.clean_base:
        from upstream_dagster.evaluation.runner import EVAL_CLOCK, eval_base

        os.environ["UPSTREAM_CLOCK"] = os.environ.get("UPSTREAM_CLOCK", EVAL_CLOCK)
        os.environ["UPSTREAM_STATE_DIR"] = str(eval_base(base))
        base = settings_mod.load()
    if not base.warehouse.exists():
        raise SystemExit("no built estate: run `make demo` (or `upstream build`) first")
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-detection-") as work:
        state = Path(work) / "state"
        shutil.copytree(base.state_dir, state, ignore=shutil.ignore_patterns(*_SKIP))
        _asking(base.estate_file, Path(work) / "estate.yaml", args.share, args.faults_per_tier)
        os.environ["UPSTREAM_STATE_DIR"] = str(state)
        os.environ["UPSTREAM_ESTATE"] = str(Path(work) / "estate.yaml")
        settings = settings_mod.load()
        cases = draw(read_estate(settings), args.random, args.seed)
        faults = [f for c in cases for f in c.faults if f.kind != "metadata"]
        before = missed(settings, faults)

        def say(line: str) -> None:
            print(f"detect: {line}", flush=True)

        found = run_detection(settings, say)
        measured = per_tier(_dial(settings, found).results)
        lines += _tier_lines("measured", measured, names=True)
        planned = run_job(settings, "score").output_for_node("proposals")
        lines += _tier_lines("projected by the plan", per_tier(planned.projected.results))
        approvers = load_estate(settings.estate_file).policies.approvers
        written = approve_detection(settings, approvers[0] if approvers else "alice")
        checks = run_job(settings, "coverage_verify_job").get_asset_check_evaluations()
        lines.append(
            "  the verify job after the write-back (projected == measured, whole dial): "
            + ", ".join("passed" if c.passed else f"FAILED {c.metadata}" for c in checks)
        )
        again = run_detection(settings, say)
        remeasured = per_tier(_dial(settings, again).results)
        lines += _tier_lines("measured again after approval", remeasured, names=True)
        after = missed(settings, faults)
        reset = {"ops": {"coverage_reset": {"config": {"confirm": True}}}}
        run_job(settings, "coverage_reset_job", reset)
        restored = per_tier(_dial(settings, found).results)  # the first measurement, read now
        lines += _tier_lines("after reset (the first measurement, read again)", restored)
        same = {t: v[:2] for t, v in restored.items()} == {t: v[:2] for t, v in measured.items()}
        lines.append(f"  reset restores the measured detection: {'yes' if same else 'NO'}")
    print(f"detection per tier (every tier asking {args.share:g}, seed of the estate's policy):")
    print("\n".join(lines))
    print(f"random suite, seed {args.seed}: {len(faults)} faults drawn, {before[1]} tried")
    for label, (quiet, tried, _) in (("before", before), ("after", after)):
        share = f"{quiet / tried:.0%}" if tried else "n/a"
        print(f"  {label} the detection proposals: {quiet} of {tried} fired no check ({share})")
    print("  now caught: " + ("; ".join(sorted(set(before[2]) - set(after[2]))) or "none"))
    print("  still no check: " + ("; ".join(after[2]) or "none"))
    print(f"  approved ({len(written)}): " + ("; ".join(written) or "none proposed"))


if __name__ == "__main__":
    main()
