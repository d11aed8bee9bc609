"""Investigation records on disk: one JSON file per incident in the state folder
(``records/``), and the evaluation's in ``evals/records/``. A record holds every read an
investigation made and what came back (`services.incident_record` builds it), so it replays
with no DataHub, warehouse or model key (`evaluation.replay`).

Values a forensic query returned are kept typed (``{"date": ...}``, ``{"decimal": ...}``).
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

from upstream_dagster.errors import UpstreamError

FORMAT = 1


def encode_value(v: Any) -> Any:
    if v is None or isinstance(v, bool | int | float | str):
        return v
    if isinstance(v, dt.datetime):
        return {"datetime": v.isoformat()}
    if isinstance(v, dt.date):
        return {"date": v.isoformat()}
    if isinstance(v, Decimal):
        return {"decimal": str(v)}
    return {"text": str(v)}


def decode_value(v: Any) -> Any:
    if not isinstance(v, dict):
        return v
    (kind, text), *_ = v.items()
    decoders: dict[str, Any] = {
        "datetime": dt.datetime.fromisoformat,
        "date": dt.date.fromisoformat,
        "decimal": Decimal,
    }
    return decoders.get(kind, str)(text)


def record_path(state_dir: Path, key: str) -> Path:
    """Where the reliability job keeps an incident's record."""
    return Path(state_dir) / "records" / f"{key}.json"


def dumps(record: dict[str, Any]) -> str:
    return json.dumps(record, indent=1, sort_keys=True) + "\n"


def write(path: Path, record: dict[str, Any]) -> None:
    """Atomically: a reader never sees half a record."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(dumps(record))
    tmp.replace(path)


def load(path: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise UpstreamError(
            f"cannot read the record {path}: {exc}", "make the records again with `make eval`"
        ) from exc
    return data
