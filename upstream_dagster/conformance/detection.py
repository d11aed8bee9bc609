"""Detection coverage as the dial reads it: what `upstream detect` measured (which seeded faults
were tried on each asset and its feeds, and which check caught each), kept in the state folder,
attached to the facts the dial scores, and shown per asset with the faults that slipped through.

Pure: no DataHub, no warehouse. The measurement itself is `evaluation.detect`'s.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from upstream_dagster.conformance.context import FaultTrial, MetadataContext
from upstream_dagster.conformance.requirements import DETECT_COMMAND, CheckResult, assertion_urn
from upstream_dagster.errors import UpstreamError
from upstream_dagster.spec.models import DetectionPolicy, EstateSpec
from upstream_dagster.spec.urns import relation_of, short

REQUIREMENT = "min_fault_detection"
FILE = "detection.json"


@dataclass(frozen=True)
class Detection:
    """One measurement: the draw's seed and budget, and the trials per asset URN."""

    measured_ms: int
    policy: DetectionPolicy
    trials: tuple[tuple[str, tuple[FaultTrial, ...]], ...]  # (asset URN, its trials)
    not_tried: tuple[str, ...] = ()  # faults drawn but left when the time budget was spent
    seconds: float = 0.0

    @property
    def by_asset(self) -> Mapping[str, tuple[FaultTrial, ...]]:
        return dict(self.trials)

    def all_trials(self) -> list[FaultTrial]:
        return [t for _, ts in self.trials for t in ts]

    def missed_share(self) -> float | None:
        """The share of tried faults that fired no check (None: nothing tried)."""
        every = self.all_trials()
        return sum(not t.caught_by for t in every) / len(every) if every else None


def path_in(state_dir: Path) -> Path:
    return state_dir / FILE


def save(state_dir: Path, detection: Detection) -> Path:
    body = {
        "measured_ms": detection.measured_ms,
        "policy": detection.policy.model_dump(),
        "seconds": detection.seconds,
        "not_tried": list(detection.not_tried),
        "assets": {
            urn: [
                {
                    "fault": t.fault,
                    "relation": t.relation,
                    "kind": t.kind,
                    "caught_by": list(t.caught_by),
                    "would_catch": list(t.would_catch),
                }
                for t in trials
            ]  # fmt: skip
            for urn, trials in detection.trials
        },
    }
    state_dir.mkdir(parents=True, exist_ok=True)
    target = path_in(state_dir)
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps(body, indent=1, sort_keys=True))
    tmp.replace(target)  # a reader never sees half a file
    return target


def _trial(t: dict[str, Any]) -> FaultTrial:
    return FaultTrial(
        str(t["fault"]),
        str(t["relation"]),
        str(t["kind"]),
        tuple(str(c) for c in t["caught_by"]),
        tuple(str(w) for w in t.get("would_catch", ())),
    )


def load(state_dir: Path) -> Detection | None:
    """The last measurement, or None when `upstream detect` never ran here."""
    target = path_in(state_dir)
    if not target.exists():
        return None
    try:
        body: dict[str, Any] = json.loads(target.read_text())
        trials = tuple(
            (str(urn), tuple(_trial(t) for t in rows))
            for urn, rows in sorted(body["assets"].items())
        )
        return Detection(
            int(body["measured_ms"]),
            DetectionPolicy.model_validate(body["policy"]),
            trials,
            tuple(str(x) for x in body.get("not_tried", ())),
            float(body.get("seconds", 0.0)),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise UpstreamError(
            f"{target} is not a detection measurement Upstream can read ({exc})",
            f"delete it and run `{DETECT_COMMAND}` again",
        ) from exc


def current(detection: Detection | None, spec: EstateSpec) -> Detection | None:
    """The measurement, if it was made under the draw estate.yaml asks for now: one made with
    another seed or budget measures something else, so it reads as not measured."""
    if detection is None or detection.policy != spec.policies.detection:
        return None
    return detection


def with_detection(
    ctx: MetadataContext, detection: Detection | None, spec: EstateSpec
) -> MetadataContext:
    """``ctx`` with each measured asset's fault trials attached (the rest stay unmeasured)."""
    found = current(detection, spec)
    if found is None:
        return ctx
    present = {x.urn for a in ctx.assets for x in a.assertions}
    urns: dict[str, list[str]] = {}
    for a in ctx.assets:
        urns.setdefault(relation_of(a.urn).lower(), []).append(a.urn)
    trials = {urn: tuple(_held(present, urns, t) for t in ts) for urn, ts in found.by_asset.items()}
    assets = tuple(
        replace(a, fault_trials=trials[a.urn]) if a.urn in trials else a for a in ctx.assets
    )
    return replace(ctx, assets=assets)


def _held(present: set[str], urns: Mapping[str, list[str]], trial: FaultTrial) -> FaultTrial:
    """``trial`` less the catches by an assertion Upstream wrote on another asset that DataHub
    no longer holds (``present``: the assertions it holds; ``urns``: the assets of each
    relation): such a check counts while it exists, so `reset` takes its catch away as it
    takes away the asset's own."""
    prefix = "assertion "

    def holds(check: str) -> bool:
        if not check.startswith(prefix):
            return True
        template, _, table = check.removeprefix(prefix).rpartition(" on ")
        return any(assertion_urn(u, template) in present for u in urns.get(table.lower(), ()))

    return replace(trial, caught_by=tuple(c for c in trial.caught_by if holds(c)))


def detection_results(results: Iterable[CheckResult]) -> list[CheckResult]:
    return [r for r in results if r.requirement == REQUIREMENT]


def lines(results: Sequence[CheckResult]) -> list[str]:
    """The score's section on fault detection: per asset, the share caught and the faults
    that slipped through; not measured says the command that measures it."""
    rows = detection_results(results)
    if not rows:
        return []
    out = ["fault detection (min_fault_detection)"]
    if all(r.status == "not_evaluable" and "not measured" in r.reason for r in rows):
        out.append(
            f"  not measured on {len(rows)} asset(s): run `{DETECT_COMMAND}` (a sandbox copy of "
            "the warehouse is broken, never the team's)"
        )
        return out
    for r in rows:
        out.append(f"  {short(r.asset)} ({r.tier}): {r.status}: {r.reason}")
        out.extend(f"    {e}" for e in r.evidence if e.startswith("missed: "))
    return out


def markdown(results: Sequence[CheckResult]) -> str:
    """The same section for the UI: a table of the faults that slipped through, per asset."""
    rows = detection_results(results)
    if not rows:
        return ""
    text = "\n### Fault detection\n\n| asset | tier | status | measured | missed faults |\n"
    text += "|---|---|---|---|---|\n"
    for r in rows:
        missed = "; ".join(e.removeprefix("missed: ") for e in r.evidence if e.startswith("missed"))
        text += f"| {short(r.asset)} | {r.tier} | {r.status} | {r.reason} | {missed or '-'} |\n"
    return text


def tally(results: Sequence[CheckResult]) -> tuple[int, int]:
    """(faults no check caught, faults tried), over every measured asset of the dial."""
    evidence = [e for r in detection_results(results) for e in r.evidence]
    return sum(1 for e in evidence if e.startswith("missed: ")), len(evidence)


def caught_share(results: Sequence[CheckResult]) -> float | None:
    """The share of tried faults some check caught, over every measured asset (a plot point)."""
    missed, tried = tally(results)
    return round(1 - missed / tried, 4) if tried else None


def report(found: Detection, results: Sequence[CheckResult]) -> str:
    """What `upstream detect` printed: per asset the verdict, each fault with the checks that
    caught it or none, the assertions that would have, what was not tried, and the total."""
    would = {t.fault: t.would_catch for _, ts in found.trials for t in ts}
    out = []
    for r in detection_results(results):
        out.append(f"{short(r.asset)} ({r.tier}): {r.status}: {r.reason}")
        for e in r.evidence:
            fault = e.removeprefix("missed: ")
            out.append(f"  MISSED (no check fired): {fault}" if e != fault else f"  {e}")
            if e != fault and would.get(fault):
                out.append(f"    would be caught by an assertion: {', '.join(would[fault])}")
    out += [f"not tried: {n}" for n in found.not_tried]
    missed, tried = tally(results)
    out.append(
        f"{missed} of {tried} faults fired no check (seed {found.policy.seed}, "
        f"{found.seconds:.0f} s); kept for the dial (`upstream score`); `upstream plan` "
        "proposes the assertions that would have caught what slipped through"
    )
    return "\n".join(out)
