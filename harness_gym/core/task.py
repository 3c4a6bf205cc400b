"""Task records: the unit every domain is built from, loaded from versioned JSONL files.

A task file is one JSON object per line. The common fields are validated here; each domain validates
its own ``payload`` (see ``Domain.validate_payload``). A malformed file fails loudly with the file, line
and field at fault rather than producing a silently wrong task set.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

DIFFICULTIES = ("easy", "standard", "hard")
SPLITS = ("train", "eval")
"""The split a task record belongs to."""
EVAL_FRACTION = 0.2
VALIDATION = "validation"
"""A fixed subset of the train tasks for model selection (``validation_ids``): selectable like a split."""
VALIDATION_FRACTION = 0.2
SELECTABLE = ("train", VALIDATION, "eval", "all")
"""What ``select`` (and ``gym.make(id, split=...)``) accepts."""

_REQUIRED = {
    "task_id": str,
    "domain": str,
    "version": str,
    "difficulty": str,
    "split": str,
    "template": str,
    "prompt": str,
    "payload": dict,
}


class TaskFileError(ValueError):
    """A task file or record is malformed."""


@dataclass(frozen=True)
class Task:
    """One task instance. ``payload`` holds the domain-specific content (hidden references included)."""

    task_id: str
    domain: str
    version: str
    difficulty: str
    split: str
    template: str
    prompt: str
    payload: dict[str, Any] = field(hash=False, compare=False)

    def to_record(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _REQUIRED}


def task_from_record(record: Any, where: str = "record") -> Task:
    """Validate the common fields of one record and build a ``Task``."""
    if not isinstance(record, dict):
        raise TaskFileError(f"{where}: expected a JSON object, got {type(record).__name__}")
    missing = [name for name in _REQUIRED if name not in record]
    if missing:
        raise TaskFileError(f"{where}: missing field(s) {', '.join(missing)}")
    extra = sorted(set(record) - set(_REQUIRED))
    if extra:
        raise TaskFileError(f"{where}: unknown field(s) {', '.join(extra)}")
    for name, kind in _REQUIRED.items():
        if not isinstance(record[name], kind):
            raise TaskFileError(
                f"{where}: field {name!r} must be {kind.__name__}, got {type(record[name]).__name__}"
            )
    if record["difficulty"] not in DIFFICULTIES:
        raise TaskFileError(f"{where}: difficulty {record['difficulty']!r} is not one of {DIFFICULTIES}")
    if record["split"] not in SPLITS:
        raise TaskFileError(f"{where}: split {record['split']!r} is not one of {SPLITS}")
    if not record["task_id"]:
        raise TaskFileError(f"{where}: empty task_id")
    return Task(**record)


def read_jsonl(path: Path | str) -> list[Task]:
    """Read a task file; every error names the file and line."""
    path = Path(path)
    tasks: list[Task] = []
    seen: set[str] = set()
    with path.open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TaskFileError(f"{where}: invalid JSON ({exc.msg})") from None
            task = task_from_record(record, where)
            if task.task_id in seen:
                raise TaskFileError(f"{where}: duplicate task_id {task.task_id!r}")
            seen.add(task.task_id)
            tasks.append(task)
    if not tasks:
        raise TaskFileError(f"{path}: no tasks")
    return tasks


def write_jsonl(records: Iterable[dict[str, Any]], path: Path | str) -> None:
    """Write records one per line with a stable key order, so regenerated files compare byte for byte."""
    with Path(path).open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n")


def write_generated(
    generate: Callable[[], list[dict[str, Any]]], default: Path, argv: Sequence[str] | None = None
) -> int:
    """A task generator's command line: write its records to ``argv[0]``, or to ``default``."""
    path = Path(argv[0]) if argv else default
    records = generate()
    write_jsonl(records, path)
    print(f"wrote {len(records)} tasks to {path}")
    return 0


def packaged_task_file(name: str) -> Path:
    """Path of a task file shipped in ``harness_gym/data``."""
    return Path(str(resources.files("harness_gym") / "data" / name))


def stratified_split(
    items: Sequence[tuple[str, str, str]], eval_fraction: float = EVAL_FRACTION, seed: int = 0
) -> dict[str, str]:
    """Assign each item to ``train`` or ``eval``, stratified by difficulty, keeping templates whole.

    ``items`` are ``(task_id, difficulty, template)``. Within each difficulty, whole template groups are
    moved to eval (in a seeded order) until exactly ``round(eval_fraction * n)`` items are there, so no
    template appears in both splits. Raises if the group sizes make the exact count impossible.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    assignment: dict[str, str] = {}
    for difficulty in DIFFICULTIES:
        groups: dict[str, list[str]] = {}
        for task_id, diff, template in items:
            if diff == difficulty:
                groups.setdefault(template, []).append(task_id)
        total = sum(len(ids) for ids in groups.values())
        target = round(eval_fraction * total)
        names = sorted(groups)
        order = [names[i] for i in rng.permutation(len(names))]
        in_eval = 0
        for name in order:
            size = len(groups[name])
            split = "eval" if in_eval + size <= target else "train"
            in_eval += size if split == "eval" else 0
            for task_id in groups[name]:
                assignment[task_id] = split
        if in_eval != target:
            raise ValueError(
                f"cannot place exactly {target} {difficulty} tasks in eval with template groups of sizes "
                f"{sorted(len(v) for v in groups.values())}"
            )
    return assignment


def validation_ids(
    tasks: Sequence[Task], fraction: float = VALIDATION_FRACTION, seed: int = 0
) -> frozenset[str]:
    """The validation tasks: ``round(fraction * n)`` of each difficulty's ``n`` train tasks (at least one
    where there are two or more), in a seeded order of their ids.

    Validation tasks stay train tasks: rollout buffers are collected on the whole train split, as in the
    paper's protocol, so validation measures a policy on tasks its buffer covers. What it keeps apart is
    the eval split: model selection (early stopping, hyperparameters, learning curves) reads validation,
    and eval is played once, at the end."""
    import numpy as np

    rng = np.random.default_rng(seed)
    chosen: set[str] = set()
    for difficulty in DIFFICULTIES:
        ids = sorted(
            task.task_id for task in tasks if task.split == "train" and task.difficulty == difficulty
        )
        k = max(round(fraction * len(ids)), 1 if len(ids) >= 2 else 0)
        chosen.update(ids[i] for i in rng.permutation(len(ids))[:k])
    return frozenset(chosen)


def select(tasks: Sequence[Task], split: str) -> list[Task]:
    """Tasks of one split (``SELECTABLE``): ``"validation"`` is ``validation_ids`` of the train tasks and
    ``"all"`` keeps every task."""
    if split == "all":
        return list(tasks)
    if split == VALIDATION:
        chosen = validation_ids(tasks)
        return [task for task in tasks if task.task_id in chosen]
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}: expected one of {', '.join(map(repr, SELECTABLE))}")
    return [task for task in tasks if task.split == split]
