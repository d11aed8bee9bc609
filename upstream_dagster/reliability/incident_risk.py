"""Risk of acting on a diagnosis, in the conformance risk's terms, with the arithmetic shown.

0.25 business criticality   the symptom carries a critical domain or glossary term
0.15 historical fragility   earlier root causes remembered on the symptom
0.15 blast radius           dashboards and charts downstream of the cause
0.10 lineage depth          hops from the cause to the symptom
0.20 action                 what the fix changes: a code patch > a reload > a re-run
0.15 x (1 - confidence)
"""

from __future__ import annotations

from upstream_dagster.conformance.risk import Risk, Term

ACTION_WEIGHT = {
    "patch": 1.0,
    "revert": 1.0,
    "reload": 0.5,
    "rerun": 0.3,
    "escalate": 0.0,
    "none": 0.0,
}


def incident_risk(
    critical: list[str],
    remembered: int,
    consumers: int | None,
    hops: int,
    action: str,
    confidence: float,
) -> Risk:
    return Risk(
        (
            Term(
                "criticality",
                0.25,
                1.0 if critical else 0.0,
                "critical: " + ", ".join(critical) if critical else "no critical domain or term",
            ),
            Term(
                "fragility",
                0.15,
                min(1.0, remembered / 3),
                f"{remembered} earlier root causes remembered on the symptom",
            ),
            Term(
                "blast_radius",
                0.15,
                None if consumers is None else min(1.0, consumers / 3),
                "not read: a warm run does not walk lineage"
                if consumers is None
                else f"{consumers} dashboards or charts downstream of the cause",
            ),
            Term("lineage_depth", 0.10, min(1.0, hops / 6), f"{hops} hops cause to symptom"),
            Term("action", 0.20, ACTION_WEIGHT.get(action, 1.0), f"the fix is a {action}"),
            Term("uncertainty", 0.15, 1.0 - confidence, f"confidence {confidence:.2f}"),
        )
    )
