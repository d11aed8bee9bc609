"""A launch's request to the gate, built inside the run that writes, from what the run holds.

With ``identity: datahub`` the run itself asks the deployment's DataHub whose reviewer token it
carries (`upstream approve` hands its own run the token as a resource, never as configuration;
a launchpad run carries none). Nothing outside the run can vouch for anyone: there is no
process state to hand an identity over, only a token DataHub must accept.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from upstream_dagster import gate
from upstream_dagster.errors import UpstreamError
from upstream_dagster.spec.models import Policies

# Run tags a launcher reads to change the run's own environment or image: a write-back that
# carries one does not run as the deployment configured it.
LAUNCH_OVERRIDES = ("dagster-k8s/config", "dagster-k8s/", "ecs/", "dagster-docker/", "docker/")


def overridden(tags: Mapping[str, str]) -> str:
    """Why this launch is not the deployment's own ("" when it is)."""
    found = sorted(k for k in tags if k.startswith(LAUNCH_OVERRIDES))
    if not found:
        return ""
    return (
        f"this run carries launcher overrides ({', '.join(found)}), which can change its "
        "environment: a write-back runs only as the deployment configured it"
    )


def request(
    policy: Policies,
    digest: str,
    reviewer: str,
    automatic: bool,
    proof: str,
    nonce: str,
    token: str,
    ask: Callable[[str], str],
    tags: Mapping[str, str],
) -> gate.Request:
    """The request, with whom DataHub vouched for when the policy asks it: ``ask(token)`` asks
    the deployment's DataHub (and no other) whose token the run carries."""
    base = gate.Request(digest, reviewer, automatic, proof, nonce=nonce, launch=overridden(tags))
    if policy.identity != "datahub" or automatic:
        return base
    if not token:
        return replace(base, vouch_note="this run carries no reviewer token (a launchpad run "
                       "carries none)")  # fmt: skip
    try:
        return replace(base, vouched=ask(token))
    except UpstreamError as exc:
        return replace(base, vouch_note=exc.problem)
