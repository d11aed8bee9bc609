"""Which nodes are candidate causes.

A *root* is an unhealthy node with nothing unhealthy upstream of it (`investigate.roots`). Two
things make the list honest:

- A model is a cause only if its code or its inputs changed. A root that is a model whose code
  did not change (its history says so) moved only because of what it read: it is *derived*,
  and the inputs that changed, even a little (minor findings: three rows of a lookup, one
  percent duplicated), are candidates beside it. With no change anywhere above it, it stays a
  candidate, derived, and its confidence says so.
- When nothing upstream is unhealthy at all and the check still failed, the smallest changes
  are the candidates: the nodes with a minor change and no change above them.

Pure.
"""

from __future__ import annotations

from upstream_dagster.reliability.evidence import Finding
from upstream_dagster.reliability.walk import Investigation


def own(inv: Investigation, urn: str) -> list[Finding]:
    """A node's findings, less the failing check as reported on it."""
    check = inv.trigger.check
    out = []
    for f in inv.findings.get(urn, []):
        detail = dict(inv.ledger[f.evidence].detail)
        if detail.get("assertion") == check.assertion or (
            check.description and detail.get("check") == check.description
        ):
            continue
        out.append(f)
    return out


def _changed_above(inv: Investigation, urn: str) -> bool:
    """Whether a node with any change of its own lies upstream of ``urn``, directly or through
    nodes that showed none."""
    seen: set[str] = set()
    stack = list(inv.upstream.get(urn, ()))
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if own(inv, node):
            return True
        stack.extend(inv.upstream.get(node, ()))
    return False


def minor_origins(inv: Investigation, below: str) -> list[str]:
    """Nodes upstream of ``below`` with changes too small to call them unhealthy and no change
    above them: where a small, decisive change starts."""
    seen: set[str] = set()
    stack = list(inv.upstream.get(below, ()))
    out = []
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        found = own(inv, node)
        if found and all(f.minor for f in found) and not _changed_above(inv, node):
            out.append(node)
        stack.extend(inv.upstream.get(node, ()))
    return sorted(out)


def code_known(inv: Investigation, urn: str) -> bool:
    """Whether the node's own code is known as it stood before the window: only then can its
    not changing be told apart from not knowing."""
    view = inv.views.get(urn)
    return bool(view and any(at <= inv.trigger.window.last_good_ms for at, _ in view.code))


def derived(inv: Investigation, urn: str) -> bool:
    """A model whose data moved while its code did not (and it was not left out of a build)."""
    found = own(inv, urn)
    if not code_known(inv, urn) or not found:
        return False
    classes = {f.failure_class for f in found}
    return "code_change" not in classes and "not_rebuilt" not in classes


def candidates(inv: Investigation, roots: list[str]) -> tuple[list[str], set[str]]:
    """The candidate causes and, of them, the derived ones."""
    out = list(roots)
    marked = {r for r in roots if derived(inv, r)}
    for r in sorted(marked):
        out += [u for u in minor_origins(inv, r) if u not in out]
    if not any(own(inv, r) for r in roots):
        out += [u for u in minor_origins(inv, inv.trigger.symptom) if u not in out]
        if inv.trigger.symptom not in out and own(inv, inv.trigger.symptom):
            out.append(inv.trigger.symptom)  # its own change is small; it competes, derived
            if derived(inv, inv.trigger.symptom):
                marked.add(inv.trigger.symptom)
    return out, marked
