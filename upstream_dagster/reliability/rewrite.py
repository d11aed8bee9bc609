"""Rewriting a model that still names a column its upstream renamed: every reference prefers the
new name and falls back to the old one, decided when dbt compiles against the live relation
(`remediation.MACRO`), so the patch is right before and after the upstream settles.

Understood: the column passed by name to a Jinja call (a tolerant staging macro), and the column
as an identifier anywhere in the SQL (a select item, inside an expression, a filter, a join
condition), qualified or not. Quoted text, quoted identifiers, comments, Jinja and the names
after AS are left alone; a select item that was the bare column keeps its output name.
"""

from __future__ import annotations

import re
from functools import partial

# what is not SQL identifiers: Jinja, comments, strings, quoted identifiers
_SKIP = re.compile(
    r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}|--[^\n]*|/\*.*?\*/|'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"",
    re.S,
)


def _call_sites(text: str, old: str) -> list[tuple[int, int]]:
    """Spans of the quoted old name passed to a Jinja call: ``macro(x, 'old', ...)``."""
    return [m.span(1) for m in re.finditer(r"\{\{[^}]*?(['\"]" + re.escape(old) + r"['\"])", text)]


def _in_calls(text: str, old: str, choice: str) -> str:
    out = text
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
    return out


def _in_sql(text: str, old: str, choice: str) -> str:
    """Every identifier ``old`` in the SQL outside what `_SKIP` matches."""
    word = re.compile(
        r"(?<![A-Za-z0-9_$.\"])((?:[A-Za-z_][A-Za-z0-9_]*\.)?)"
        + re.escape(old)
        + r"(?![A-Za-z0-9_$(])",
        re.I,
    )
    pieces, last = [], 0
    for m in _SKIP.finditer(text):
        pieces.append((text[last : m.start()], True))
        pieces.append((m.group(0), False))
        last = m.end()
    pieces.append((text[last:], True))
    out = []
    for chunk, sql in pieces:
        if not sql:
            out.append(chunk)
            continue
        out.append(word.sub(partial(_replace, chunk, old=old, choice=choice), chunk))
    return "".join(out)


def _replace(chunk: str, m: re.Match[str], *, old: str, choice: str) -> str:
    before = chunk[: m.start()].rstrip()
    if re.search(r"(?i)\bas$", before):
        return m.group(0)  # an output name, not a reference
    ref = f"{m.group(1)}{{{{ {choice} }}}}"
    line_start = chunk.rfind("\n", 0, m.start()) + 1
    line_end = chunk.find("\n", m.end())
    rest = chunk[m.end() : line_end if line_end >= 0 else len(chunk)]
    head = chunk[line_start : m.start()]
    if (not head.strip() or head.strip().lower() in ("select", "select distinct")) and re.fullmatch(
        r"\s*,?\s*", rest
    ):
        return f"{ref} as {old}"  # a bare select item keeps its name
    return ref


def rewrite_model(text: str, old: str, new: str, relation_expr: str) -> str | None:
    """The model with every reference to ``old`` preferring ``new``; None if none found."""
    choice = f"upstream_renamed_column({relation_expr}, '{new}', '{old}')"
    out = _in_sql(_in_calls(text, old, choice), old, choice)
    return out if out != text else None
