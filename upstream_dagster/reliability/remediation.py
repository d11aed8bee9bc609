"""Remediation is constructed, never generated: a fixed catalog keyed by the failure class.

A model whose own code changed gets a revert to the code the last healthy build ran (the
tracked project's), whatever the change did to its data. A rename gets a patch to the models
that still name the removed column, wherever they name it (`rewrite`): each reference prefers
the new name and falls back to the old one, decided when dbt compiles against the live
relation. A model the build skipped gets a re-run; lost, late, duplicated or changed data at a
feed gets a reload and backfill, asked of the feed's owner; a dropped column or a changed type
at a feed gets an escalation that says why no rewrite is safe. Noise, and a change that does
not reach what the check measures (a coincidence), get nothing: the sandbox then only re-runs
the check on the data as it is. Every action is deterministic: same diagnosis, same fix.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from upstream_dagster.reliability.rewrite import rewrite_model

__all__ = ["CATALOG", "MACRO", "MACRO_PATH", "Remedy", "diff", "remedy", "rewrite_model"]

MACRO_PATH = "macros/upstream_renamed_column.sql"
MACRO = """{#- Written by Upstream's remediation: pick the column a relation has now. -#}
{% macro upstream_renamed_column(relation, new_name, old_name) -%}
  {%- if execute -%}
    {%- set present = adapter.get_columns_in_relation(relation) | map(attribute='name')
        | map('lower') | list -%}
  {%- else -%}
    {%- set present = [new_name | lower] -%}
  {%- endif -%}
  {{- new_name if new_name | lower in present else old_name -}}
{%- endmacro %}
"""

CATALOG = {
    "code_change": ("revert", "revert the model's code to the version the last healthy build ran"),
    "rename": ("patch", "rewrite the models that name the old column to prefer the new one"),
    "column_removed": ("escalate", "the feed dropped a column: ask its owner; no safe rewrite"),
    "type_change": ("escalate", "the feed changed a type: ask its owner; no safe rewrite"),
    "not_rebuilt": ("rerun", "re-run the skipped model and everything downstream of it"),
    "stale": ("reload", "reload the feed, then backfill the affected days downstream"),
    "volume_drop": ("reload", "reload the affected partition range, then backfill downstream"),
    "volume_jump": ("reload", "reload the affected partition range, then backfill downstream"),
    "null_jump": ("reload", "ask the feed's owner to re-deliver, then backfill downstream"),
    "value_shift": ("reload", "ask the feed's owner to re-deliver, then backfill downstream"),
    "value_change": ("reload", "ask the feed's owner to re-deliver the values, then backfill"),
    "lost_match": ("reload", "reload the rows the lookup is missing, then backfill downstream"),
    "failing_check": ("none", "no action: nothing upstream explains the failure"),
    "coincidence": ("none", "no action: the change found does not explain the failure"),
}


@dataclass(frozen=True)
class Remedy:
    action: str  # revert | patch | rerun | reload | escalate | none
    summary: str
    diff: str = ""
    files: tuple[str, ...] = ()
    rebuild: tuple[str, ...] = ()  # dbt selectors to rebuild after the fix
    reason: str = ""  # why no patch could be constructed


def diff(path: str, before: str, after: str) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{path}" if before else "/dev/null",
            tofile=f"b/{path}",
        )
    )


def remedy(
    failure_class: str,
    model_files: dict[str, str],
    old: str | None,
    new: str | None,
    relation_expr: str,
    rebuild: tuple[str, ...],
    macro_exists: bool = False,
    revert: tuple[str, str, str] | None = None,
) -> Remedy:
    """Look the failure class up in the catalog; for a rename, construct the patch.

    ``model_files`` maps project-relative paths of the models reading the cause to their text.
    ``revert`` is (path, code now, code the last healthy build ran) of a model whose own code
    changed: the remedy is then to put it back, whatever the change did to the data."""
    if revert is not None:
        path, now, before = revert
        action, summary = CATALOG["code_change"]
        if now == before:
            return Remedy("escalate", summary, reason=f"{path} reads as it did: revert the "
                          "commit that changed the model where it was made")  # fmt: skip
        return Remedy(action, summary, diff(path, now, before), (path,), rebuild)
    action, summary = CATALOG.get(failure_class, ("none", "no catalog entry"))
    if action != "patch":
        reason = _why_not.get(failure_class, "")
        return Remedy(action, summary, rebuild=rebuild if action != "none" else (), reason=reason)
    if not (old and new):
        return Remedy("escalate", summary, reason="the rename's old and new names are unknown")
    patches, files = [], []
    for path, text in sorted(model_files.items()):
        after = rewrite_model(text, old, new, relation_expr)
        if after is not None and after != text:
            patches.append(diff(path, text, after))
            files.append(path)
    if not patches:
        return Remedy(
            "escalate",
            summary,
            reason=f"no model reading the feed names {old!r} where the rewrite can change it",
        )
    if not macro_exists:
        patches.append(diff(MACRO_PATH, "", MACRO))
        files.append(MACRO_PATH)
    return Remedy("patch", summary, "".join(patches), tuple(files), rebuild)


_why_not = {
    "column_removed": "the column is gone from the feed: no value to read instead, so no "
    "rewrite is safe; its owner must restore it or the models must stop reading it",
    "type_change": "the feed changed the column's type: casting it back could hide what "
    "changed, so its owner decides",
    "coincidence": "no lineage path carries the change to what the check measures, or the "
    "checked data did not move: a patch would fix a non-problem; the check is re-run instead",
}
