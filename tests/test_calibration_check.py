"""Issue 26: the confidence weights are chosen on seeds the fit never saw. `upstream calibrate
--held-out` compares the prior and the fitted weights there, and keeps the fitted ones only when
they do better; the committed fitting records are the ones `make calibrate` reads."""

from __future__ import annotations

from pathlib import Path

from upstream_dagster.evaluation.calibrate import Sample, check, ece
from upstream_dagster.reliability.evidence import FEATURES, PRIOR

ROOT = Path(__file__).resolve().parent.parent


def _sample(right: bool, **on: float) -> Sample:
    return Sample("c", tuple(on.get(f, 0.0) for f in FEATURES), right)


def test_the_held_out_check_keeps_the_prior_unless_the_fit_does_better() -> None:
    strong = dict(support=1.0, diversity=1.0, effect=1.0, hard=1.0)  # the prior: 0.98
    held_out = [_sample(True, **strong)] * 9 + [_sample(False)] * 9
    shy = (PRIOR[0] - 4.0, *PRIOR[1:])  # the same evidence, four units less sure: 0.5
    assert ece(held_out, PRIOR) < ece(held_out, shy)
    lines = check(held_out, shy)
    assert lines[-1].startswith("keep: the prior")
    assert "| fitted | 18 |" in "\n".join(lines) and "| 9 |" in lines[3]  # 9 right now below 0.7
    wrong_sure = [_sample(True, **strong)] * 3 + [_sample(False, **strong)] * 3
    sober = (PRIOR[0] - 4.0, *PRIOR[1:])  # half right: less sure is better calibrated
    assert check(wrong_sure, sober)[-1] == "keep: the fitted weights"


def test_the_fitting_seeds_named_by_make_calibrate_are_committed() -> None:
    makefile = (ROOT / "Makefile").read_text()
    for folder in ("evals/records/fit/random-13", "evals/records/fit/subscriptions/random-23"):
        assert len(list((ROOT / folder).glob("*.json"))) == 20, folder
    assert "--held-out" in makefile
