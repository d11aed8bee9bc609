"""The pre-image ledger's second copy: one append-only file per write-back run in the state
folder (``ledger/RUN.jsonl``), each line flushed to disk before the aspect it describes is
written. What `reset` needs survives the loss of the gate's store (a corrupt ``gate.sqlite``);
a run whose writes were undone gets a ``RUN.undone`` mark beside its file."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

from upstream_dagster.errors import UpstreamError

Json = dict[str, Any]


def folder(state_dir: Path) -> Path:
    return Path(state_dir) / "ledger"


def _safe(run_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in run_id)


def append_line(path: Path, record: Json) -> None:
    """``record`` as one JSON line at the end of ``path``, on disk before this returns (a kill
    mid-append leaves at most a torn last line, which readers skip)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def append(state_dir: Path, run_id: str, seq: int, digest: str, pre: Json) -> None:
    path = folder(state_dir) / f"{_safe(run_id)}.jsonl"
    try:
        append_line(path, {"run": run_id, "seq": seq, "digest": digest, "pre": pre})
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise UpstreamError(
                f"no space left to journal a pre-image in {path}: the write was not made",
                "free disk space where the state folder is, then `upstream reset` undoes what "
                "this write-back wrote before it stopped",
            ) from None
        raise UpstreamError(
            f"cannot journal a pre-image in {path} ({exc.strerror or exc}): the write was not made",
            "make the state folder writable (UPSTREAM_STATE_DIR), then `upstream reset`",
        ) from None


def pending(state_dir: Path) -> list[tuple[str, int, str, Json]]:
    """(run, seq, digest, pre-image) of every run not marked undone, in file order. A torn last
    line (a kill mid-append) is skipped: its aspect was never written."""
    out: list[tuple[str, int, str, Json]] = []
    base = folder(state_dir)
    if not base.is_dir():
        return out
    for path in sorted(base.glob("*.jsonl")):
        if path.with_suffix(".undone").exists():
            continue
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            out.append((str(row["run"]), int(row["seq"]), str(row["digest"]), dict(row["pre"])))
    return out


def mark_undone(state_dir: Path, run_ids: set[str]) -> None:
    for run_id in run_ids:
        path = folder(state_dir) / f"{_safe(run_id)}.jsonl"
        if path.exists():
            path.with_suffix(".undone").touch()
