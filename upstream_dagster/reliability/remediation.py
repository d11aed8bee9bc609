"""Remediation is constructed, never generated: a fixed catalog keyed by the failure class.

A rename gets a patch to the model that still names the removed column: it prefers the new
name and falls back to the old one, decided when dbt compiles against the live relation. A
model the build skipped gets a re-run; a volume or freshness problem at a feed gets a reload
and backfill; noise gets nothing. Every action is deterministic: same diagnosis, same fix.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

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
    "rename": ("patch", "rewrite the model that names the old column to prefer the new one"),
    "column_removed": ("escalate", "the feed dropped a column: ask its owner; no safe rewrite"),
    "type_change": ("escalate", "the feed changed a type: ask its owner; no safe rewrite"),
    "not_rebuilt": ("rerun", "re-run the skipped model and everything downstream of it"),
    "stale": ("reload", "reload the feed, then backfill the affected days downstream"),
    "volume_drop": ("reload", "reload the affected partition range, then backfill downstream"),
    "volume_jump": ("reload", "reload the affected partition range, then backfill downstream"),
    "null_jump": ("reload", "ask the feed's owner to re-deliver, then backfill downstream"),
    "value_shift": ("reload", "ask the feed's owner to re-deliver, then backfill downstream"),
    "failing_check": ("none", "no action: nothing upstream explains the failure"),
}


@dataclass(frozen=True)
class Remedy:
    action: str  # patch | rerun | reload | escalate | none
    summary: str
    diff: str = ""
    files: tuple[str, ...] = ()
    rebuild: tuple[str, ...] = ()  # dbt selectors to rebuild after the fix
    reason: str = ""  # why no patch could be constructed


def _call_sites(text: str, old: str) -> list[tuple[int, int]]:
    """Spans of the quoted old name passed to a Jinja call: ``macro(x, 'old', ...)``."""
    return [m.span(1) for m in re.finditer(r"\{\{[^}]*?(['\"]" + re.escape(old) + r"['\"])", text)]


def rewrite_model(text: str, old: str, new: str, relation_expr: str) -> str | None:
    """The model with every reference to ``old`` preferring ``new``; None if none found.

    Two shapes are understood: the column named as a quoted argument of a Jinja call (tolerant
    staging macros), and the column as a bare select item. Output names stay the old name.
    """
    choice = f"upstream_renamed_column({relation_expr}, '{new}', '{old}')"
    out, changed = text, False
    for start, end in reversed(_call_sites(text, old)):
        call_end = out.find("}}", end)
        call = out[start:call_end]
        alias = "" if "alias=" in call else f", alias='{old}'"
        close = call.rfind(")")
        if close < 0:
            continue
        out = (
            out[:start] + choice + call[end - start : close] + alias + call[close:] + out[call_end:]
        )
        changed = True
    bare = re.compile(r"^(\s*)" + re.escape(old) + r"(\s*,?\s*)$", re.MULTILINE)
    if bare.search(out):
        out = bare.sub(lambda m: f"{m[1]}{{{{ {choice} }}}} as {old}{m[2]}", out)
        changed = True
    return out if changed else None


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
) -> Remedy:
    """Look the failure class up in the catalog; for a rename, construct the patch.

    ``model_files`` maps project-relative paths of the models reading the cause to their text.
    """
    action, summary = CATALOG.get(failure_class, ("none", "no catalog entry"))
    if action != "patch":
        return Remedy(action, summary, rebuild=rebuild if action != "none" else ())
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
            reason=f"no model reading the feed names {old!r} in a shape the rewrite knows",
        )
    if not macro_exists:
        patches.append(diff(MACRO_PATH, "", MACRO))
        files.append(MACRO_PATH)
    return Remedy("patch", summary, "".join(patches), tuple(files), rebuild)
