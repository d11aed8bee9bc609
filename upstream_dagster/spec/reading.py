"""Reading a YAML file a person wrote, bounded while it is read: its size, its values, the
length of the lists a caller limits, aliases, nesting. Errors name the file, the line and the fix.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from yaml.composer import Composer
from yaml.events import Event
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from upstream_dagster.errors import UpstreamError

Loc = tuple[str | int, ...]


class SpecError(UpstreamError):
    def __init__(self, file: Path, line: int | None, problem: str, fix: str) -> None:
        self.file, self.line = file, line
        where = f"{file}:{line}" if line else str(file)
        super().__init__(f"{where}: {problem}", fix)


MAX_BYTES = 1_000_000  # an estate file is a page or two of YAML
MAX_NODES = 200_000  # read, and after aliases are expanded: a YAML bomb stops here, not in memory
MAX_DEPTH = 50  # levels of nesting; a file a person writes nests a few
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class Limit:
    """At most ``most`` items in the list at key path ``at``, counted while the file is read:
    the item past the limit stops the reading, at its line, before the rest is parsed."""

    at: Loc
    most: int
    name: str  # the constant that sets it, named in the error
    what: str  # what the items are, e.g. "tiers"
    fix: str


def _lines(node: yaml.Node, file: Path) -> dict[Loc, int]:
    """Map every key path in the YAML document to its 1-based line, refusing what a person
    did not mean: a key given twice in one mapping (YAML keeps the later one silently),
    control characters (terminal escapes) in any value, and a document that expands past
    MAX_NODES through aliases."""
    out: dict[Loc, int] = {}
    stack: list[tuple[yaml.Node, Loc]] = [(node, ())]
    seen = 0
    while stack:
        current, loc = stack.pop()
        seen += 1
        if seen > MAX_NODES:
            raise SpecError(
                file,
                None,
                f"the document expands to more than {MAX_NODES} values (aliases of aliases?)",
                "write the estate out plainly; anchors and aliases may not multiply it",
            )
        out.setdefault(loc, current.start_mark.line + 1)
        if isinstance(current, yaml.MappingNode):
            keys: dict[str, int] = {}
            for key, value in current.value:
                name, line = str(key.value), key.start_mark.line + 1
                if name in keys:
                    where = ".".join(str(p) for p in loc) or "the top level"
                    raise SpecError(
                        file,
                        line,
                        f"{name!r} is given twice in {where} (first at line {keys[name]}); "
                        "YAML would silently keep this one",
                        "keep one of them: merge the two blocks",
                    )
                keys[name] = line
                path = (*loc, name)
                out[path] = line
                stack.append((value, path))
        elif isinstance(current, yaml.SequenceNode):
            stack.extend((item, (*loc, i)) for i, item in enumerate(current.value))
        elif isinstance(current, yaml.ScalarNode) and _CONTROL.search(str(current.value)):
            raise SpecError(
                file,
                current.start_mark.line + 1,
                "a value holds a control character (a terminal escape sequence?)",
                "remove it: names and values in estate.yaml are plain text",
            )
    return out


def _read(file: Path) -> str:
    """The file's text, or an error that names what the path is instead."""
    if not file.exists():
        raise SpecError(
            file,
            None,
            "the estate file does not exist",
            "create it (see estate.yaml in the project for a commented example), or point "
            "UPSTREAM_ESTATE at yours (`upstream score` also takes --estate PATH)",
        )
    if not file.is_file():
        raise SpecError(
            file,
            None,
            "is not a regular file (a directory or a device)",
            "point UPSTREAM_ESTATE (or `upstream score --estate`) at an estate.yaml file",
        )
    size = file.stat().st_size
    with file.open("rb") as handle:  # never more than MAX_BYTES + 1, whatever stat said
        raw = handle.read(MAX_BYTES + 1) if size <= MAX_BYTES else b""
    if size > MAX_BYTES or len(raw) > MAX_BYTES:
        raise SpecError(
            file,
            None,
            f"is {f'{size} bytes' if size > MAX_BYTES else f'over {MAX_BYTES} bytes'}; an "
            f"estate or scenario file is at most {MAX_BYTES} (MAX_BYTES)",
            "point at the estate.yaml or the scenario file, not a data file",
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SpecError(
            file,
            line,
            f"is not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})",
            "save the file as UTF-8 (it may be binary, or Latin-1)",
        ) from None


def _too_deep(file: Path, line: int | None) -> SpecError:
    return SpecError(
        file,
        line,
        "the YAML is nested too deeply to be a file a person wrote (more than "
        f"{MAX_DEPTH} levels, MAX_DEPTH)",
        "an estate or scenario file nests a few levels",
    )


class _Counting(Composer):
    """PyYAML's composer, counting what it builds as it builds it: a file past MAX_NODES or a
    `Limit` stops at the line where it crosses it, not after a full parse."""

    file: Path
    limits: dict[Loc, Limit]
    path: list[str | int]
    seen: int
    peek_event: Callable[[], Event]  # the parser's, which comes later in the reader's bases

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        mark = self.peek_event().start_mark
        line = mark.line + 1 if mark else None
        self.seen += 1
        if self.seen > MAX_NODES:
            raise SpecError(
                self.file,
                line,
                f"the file holds more than {MAX_NODES} values (MAX_NODES)",
                "an estate or scenario file is a page or two: point at the right file",
            )
        if len(self.path) >= MAX_DEPTH:
            raise _too_deep(self.file, line)
        if parent is None:
            return super().compose_node(parent, index)
        step: str | int = -1  # a mapping's key is itself no path: -1 is never a limit's
        if isinstance(parent, SequenceNode):
            step = index
            limit = self.limits.get(tuple(self.path))
            if limit is not None and index >= limit.most:
                raise SpecError(
                    self.file,
                    line,
                    f"more than {limit.most} {limit.what} ({limit.name}); the file stops being "
                    "read here",
                    limit.fix,
                )
        elif isinstance(parent, MappingNode) and isinstance(index, ScalarNode):
            step = str(index.value)
        self.path.append(step)
        try:
            return super().compose_node(parent, index)
        finally:
            self.path.pop()


# libyaml's event parser where it is installed (a 1 MB file is read in a second, not a minute);
# the composing, counting and line numbers are Python's either way
if TYPE_CHECKING:
    _Base = yaml.SafeLoader
else:
    _Base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Reader(_Counting, _Base):
    def __init__(self, text: str, file: Path, limits: Sequence[Limit]) -> None:
        _Base.__init__(self, text)
        self.anchors = {}
        self.file, self.limits = file, {limit.at: limit for limit in limits}
        self.path, self.seen = [], 0


def read_yaml(file: Path, limits: Sequence[Limit] = ()) -> tuple[Any, dict[Loc, int]]:
    """A YAML file, read as Upstream reads every file a person writes: a regular UTF-8 file
    of bounded size, no key twice, no control characters, no alias bombs, no runaway nesting,
    and no list at a ``limits`` path longer than its limit (checked while reading).
    Returns the data and the line of every key path; errors are `SpecError`s."""
    text = _read(file)
    reader = _Reader(text, file, limits)
    try:
        node = reader.get_single_node()
        lines = _lines(node, file) if node is not None else {}
        data = reader.construct_document(node) if node is not None else None
    except RecursionError:  # MAX_DEPTH stops a file first; this guards a lower stack limit
        raise _too_deep(file, None) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        if "maximum nesting depth" in problem:  # libyaml's own limit, met while scanning ahead
            raise _too_deep(file, mark.line + 1 if mark else None) from None
        raise SpecError(
            file,
            mark.line + 1 if mark else None,
            f"invalid YAML: {problem}",
            "fix the YAML syntax at that line (indentation, a missing ':' or quote)",
        ) from exc
    finally:
        reader.dispose()
    return data, lines
