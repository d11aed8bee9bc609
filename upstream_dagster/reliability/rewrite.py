"""Rewriting a model that still names a column its upstream renamed: every reference prefers the
new name and falls back to the old one, decided when dbt compiles against the live relation
(`remediation.MACRO`), so the patch is right before and after the upstream settles.

Understood: the column passed by name to a Jinja call (a tolerant staging macro), and the column
as an identifier anywhere in the SQL (a select item, inside an expression, a filter, a join
condition), qualified or not, bare or double-quoted (a reserved word, mixed case, a space or a
dash: the chosen name is then quoted as the adapter quotes). Quoted text, other quoted
identifiers, comments, Jinja and the names after AS are left alone; a select item that was the
bare column keeps its output name.
"""

from __future__ import annotations

import re
from functools import partial

from upstream_dagster.spec.urns import unquoted

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


_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# what may qualify a column: ``t.`` or ``"t".``
_QUALIFIER = re.compile(r'(?:[A-Za-z_][A-Za-z0-9_]*|"(?:[^"]|"")*")\.$')


def _output_kept(text: str, start: int, end: int) -> bool:
    """Whether the reference at ``text[start:end]`` is a whole select item (its name is then
    the output column's, and must stay)."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    rest = text[end : line_end if line_end >= 0 else len(text)]
    head = _QUALIFIER.sub("", text[line_start:start].rstrip())
    bare = not head.strip() or head.strip().lower() in ("select", "select distinct")
    return bare and re.fullmatch(r"\s*,?\s*", rest) is not None


def _quoted(text: str, m: re.Match[str], old: str, choice: str) -> str | None:
    """A double-quoted identifier naming ``old`` (DuckDB matches names in any case), rewritten."""
    found = m.group(0)
    if found[0] != '"' or unquoted(found).lower() != old.lower() or found == unquoted(found):
        return None
    if re.search(r"(?i)\bas$", text[: m.start()].rstrip()):
        return None  # an output name, not a reference
    ref = f"{{{{ adapter.quote({choice}) }}}}"
    return f"{ref} as {found}" if _output_kept(text, m.start(), m.end()) else ref


def _in_sql(text: str, old: str, choice: str) -> str:
    """Every identifier ``old`` in the SQL outside what `_SKIP` matches, and every quoted one."""
    word = re.compile(
        r"(?<![A-Za-z0-9_$.\"])((?:[A-Za-z_][A-Za-z0-9_]*\.)?)"
        + re.escape(old)
        + r"(?![A-Za-z0-9_$(])",
        re.I,
    )
    plain = _PLAIN.fullmatch(old) is not None  # `due-date` unquoted is a subtraction

    def bare(chunk: str) -> str:
        return word.sub(partial(_replace, chunk, old=old, choice=choice), chunk) if plain else chunk

    out, last = [], 0
    for m in _SKIP.finditer(text):
        out += [bare(text[last : m.start()]), _quoted(text, m, old, choice) or m.group(0)]
        last = m.end()
    return "".join([*out, bare(text[last:])])


def _replace(chunk: str, m: re.Match[str], *, old: str, choice: str) -> str:
    before = chunk[: m.start()].rstrip()
    if re.search(r"(?i)\bas$", before):
        return m.group(0)  # an output name, not a reference
    ref = f"{m.group(1)}{{{{ {choice} }}}}"
    if _output_kept(chunk, m.start(), m.end()):
        return f"{ref} as {old}"  # a bare select item keeps its name
    return ref


def _jinja(name: str) -> str:
    """A column name as a Jinja string literal."""
    return "'" + name.replace("\\", "\\\\").replace("'", "\\'") + "'"


def rewrite_model(text: str, old: str, new: str, relation_expr: str) -> str | None:
    """The model with every reference to ``old`` preferring ``new``; None if none found."""
    choice = f"upstream_renamed_column({relation_expr}, {_jinja(new)}, {_jinja(old)})"
    out = _in_sql(_in_calls(text, old, choice), old, choice)
    return out if out != text else None
