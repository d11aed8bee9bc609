"""Load estate.yaml; every error names the file, the line, and the fix."""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from upstream_dagster.errors import UpstreamError
from upstream_dagster.spec.models import EstateSpec

Loc = tuple[str | int, ...]


class SpecError(UpstreamError):
    def __init__(self, file: Path, line: int | None, problem: str, fix: str) -> None:
        self.file, self.line = file, line
        where = f"{file}:{line}" if line else str(file)
        super().__init__(f"{where}: {problem}", fix)


MAX_BYTES = 1_000_000  # an estate file is a page or two of YAML
MAX_NODES = 200_000  # after aliases are expanded: a YAML bomb stops here, not in memory
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


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
    """The estate file's text, or an error that names what the path is instead."""
    if not file.exists():
        raise SpecError(
            file,
            None,
            "the estate file does not exist",
            "create it (see estate.yaml in the project for a commented example) or "
            "pass --estate PATH",
        )
    if not file.is_file():
        raise SpecError(
            file,
            None,
            "is not a regular file (a directory or a device)",
            "pass --estate the path of an estate.yaml file",
        )
    size = file.stat().st_size
    if size > MAX_BYTES:
        raise SpecError(
            file,
            None,
            f"is {size} bytes; an estate file is at most {MAX_BYTES}",
            "point --estate at the estate.yaml, not a data file",
        )
    raw = file.read_bytes()[: MAX_BYTES + 1]
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


def _line_of(lines: dict[Loc, int], loc: Loc) -> int | None:
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return None


def _model_at(loc: Loc) -> type[BaseModel] | None:
    """The model that owns the mapping at ``loc`` (for 'did you mean' suggestions)."""
    model: Any = EstateSpec
    for part in loc:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part) if hasattr(model, "model_fields") else None
        if field is None:
            return None
        annotation = field.annotation
        args = getattr(annotation, "__args__", ())
        model = next(
            (a for a in (annotation, *args) if isinstance(a, type) and issubclass(a, BaseModel)),
            None,
        )
        if model is None:
            return None
    return model if isinstance(model, type) else None


def _describe(error: Any, lines: dict[Loc, int], file: Path) -> SpecError:
    loc: Loc = tuple(error["loc"])
    dotted = ".".join(str(p) if isinstance(p, str) else f"[{p}]" for p in loc).replace(".[", "[")
    kind = error["type"]
    if kind == "extra_forbidden":
        key = str(loc[-1])
        owner = _model_at(loc[:-1])
        known = list(owner.model_fields) if owner else []
        near = difflib.get_close_matches(key, known, n=1)
        hint = f"did you mean {near[0]!r}? " if near else ""
        what = "requirement" if owner and owner.__name__ == "Requirements" else "key"
        return SpecError(
            file,
            _line_of(lines, loc),
            f"unknown {what} {key!r} at {dotted}",
            f"{hint}valid here: {', '.join(known)}",
        )
    if kind == "missing":
        return SpecError(
            file,
            _line_of(lines, loc[:-1]),
            f"{dotted} is required but missing",
            f"add '{loc[-1]}:' here (see the commented estate.yaml for an example)",
        )
    message = str(error["msg"]).removeprefix("Value error, ")
    got = error.get("input")
    shown = f" (got {got!r})" if not isinstance(got, dict | list) else ""
    constraint = kind == "value_error" or kind.startswith(
        ("greater_than", "less_than", "too_", "string_too", "string_pattern")
    )
    fix = (
        "change the value at that line as the message says"
        if constraint
        else f"give {dotted} a value of the expected type (see the commented estate.yaml)"
    )
    return SpecError(file, _line_of(lines, loc), f"{dotted}: {message}{shown}", fix)


def read_yaml(file: Path) -> tuple[Any, dict[Loc, int]]:
    """A YAML file, read as Upstream reads every file a person writes: a regular UTF-8 file
    of bounded size, no key twice, no control characters, no alias bombs, no runaway nesting.
    Returns the data and the line of every key path; errors are `SpecError`s."""
    text = _read(file)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        lines = _lines(node, file) if node is not None else {}
        data = yaml.safe_load(text)
    except RecursionError:
        raise SpecError(
            file,
            None,
            "the YAML is nested too deeply to be a file a person wrote",
            "an estate or scenario file nests a few levels",
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise SpecError(
            file,
            mark.line + 1 if mark else None,
            f"invalid YAML: {problem}",
            "fix the YAML syntax at that line (indentation, a missing ':' or quote)",
        ) from exc
    return data, lines


def load_estate(path: Path | str) -> EstateSpec:
    file = Path(path)
    data, lines = read_yaml(file)
    node = data
    if node is None or not isinstance(data, dict):
        raise SpecError(
            file,
            1,
            "the file holds no mapping of settings",
            "start with 'version: 1' and a 'tiers:' list",
        )
    try:
        return EstateSpec.model_validate(data)
    except ValidationError as exc:
        # A misspelt key also makes its correct spelling "missing": report the misspelling.
        first = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")[0]
        raise _describe(first, lines, file) from exc
