"""Reading upstream benchmark files (tau-bench, DB-Bench) with errors that name the file and line.

``json.loads`` on one line of a JSONL file reports "line 1 column 35" and no file; a missing field is a
bare ``KeyError``. Here every problem is a ``TaskFileError`` naming the file, the 1-based line number in
that file and, for a missing field, the field's path.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from harness_gym.core.task import TaskFileError


def read_json(path: Path) -> Any:
    """A whole JSON file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TaskFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TaskFileError(
            f"{path} line {exc.lineno} column {exc.colno}: invalid JSON ({exc.msg})"
        ) from None


def read_jsonl(path: Path, required: Iterable[str] = ()) -> list[tuple[int, dict[str, Any]]]:
    """The JSON objects of a JSONL file with their 1-based line numbers (blank lines skipped).

    ``required`` are field paths (``"table/table_info/rows"``) every record must have.
    """
    fields = tuple(required)
    records = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise TaskFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TaskFileError(
                f"{path} line {number} column {exc.colno}: invalid JSON ({exc.msg})"
            ) from None
        if not isinstance(record, dict):
            raise TaskFileError(f"{path} line {number}: expected a JSON object, got {type(record).__name__}")
        missing = [name for name in fields if not _has(record, name.split("/"))]
        if missing:
            raise TaskFileError(f"{path} line {number}: missing field {', '.join(missing)}")
        records.append((number, record))
    return records


def _has(record: Mapping[str, Any], parts: list[str]) -> bool:
    node: Any = record
    for part in parts:
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True
