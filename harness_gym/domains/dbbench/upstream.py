"""Load AgentBench DB-Bench files (``standard.jsonl`` -> eval, ``dev.jsonl`` -> train) as tasks.

Records keep the upstream structure under ``payload["record"]``. References: INSERT/UPDATE use the
gold SQL (``label[0]``); the SELECT family uses ``Final Answer: <label>`` because upstream's gold SELECT
SQL is LLM-written and often does not run. Flawed pools are derived from the record (changed literal,
duplicated row, wrong table, syntax error; perturbed answers) and kept only if they score below max.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from harness_gym.core.task import Task, TaskFileError
from harness_gym.domains.dbbench.verifier import artifact_scores, task_kind
from harness_gym.domains.upstream_files import read_jsonl

FILES = {"eval": "standard.jsonl", "train": "dev.jsonl"}
RECORD_FIELDS = (
    "description",
    "label",
    "type",
    "table/table_name",
    "table/table_info/columns",
    "table/table_info/rows",
)
"""Fields every upstream record must have (``table/table_name``: a nested field)."""
DIFFICULTY = {
    "INSERT": "easy",
    "other": "easy",
    "UPDATE": "standard",
    "counting": "standard",
    "ranking": "standard",
    "comparison": "hard",
}


def prompt_of(record: Mapping[str, Any]) -> str:
    """The task prompt of an AgentBench record: its description and schema note, then the answer form
    (the generated tasks use it too, so both sources ask the same way)."""
    return (
        f"{record['description']}\n{record['add_description']}\n"
        "Answer with ONE MySQL statement in a ```sql fence (for a question, a SELECT whose result is the "
        'answer; you may instead reply `Final Answer: ["v1", ...]`).'
    )


def _difficulty(kind: str) -> str:
    return DIFFICULTY.get(kind, "hard" if kind.startswith("aggregation") else "standard")


def _answer(values: list[Any]) -> str:
    return "Final Answer: " + json.dumps(values, ensure_ascii=False)


def _bump(value: str) -> str:
    try:
        number = float(value.replace(",", ""))
    except ValueError:
        return value + " (approx.)"
    return str(int(number * 2 + 3)) if number.is_integer() else f"{number * 2 + 3:.2f}"


def _select_pool(record: Mapping[str, Any]) -> list[tuple[str, str]]:
    label = [str(v) for v in record["label"]]
    name = "`" + record["table"]["table_name"].replace("`", "``") + "`"
    cells = [str(c) for row in record["table"]["table_info"]["rows"] for c in row]
    other = next((c for c in cells if c not in label and c.strip()), "none")
    return [
        ("wrong_aggregate", _answer([_bump(v) for v in label] or ["1"])),
        ("wrong_filter", _answer([other])),
        ("wrong_column", _answer([*label[:-1], other] if len(label) > 1 else [record["heads"][0]])),
        ("syntax_error", f"SELECT * FORM {name}"),
        ("wrong_table", f"SELECT * FROM `{record['table']['table_name']}_old`"),
    ]


def _modify_pool(record: Mapping[str, Any]) -> list[tuple[str, str]]:
    gold = record["label"][0].strip().rstrip(";")
    name = record["table"]["table_name"]
    literal = re.search(r"'([^'\\]*)'", gold)
    changed = gold[: literal.end(1)] + "x" + gold[literal.end(1) :] if literal else gold + " "
    pool = [
        ("wrong_filter", changed),
        ("syntax_error", re.sub(r"^(INSERT\s+INTO|UPDATE)", r"\1 INTO INTO", gold, count=1, flags=re.I)),
        ("wrong_table", gold.replace(name, name + "_old", 1) if name in gold else "UPDATE t_old SET x = 1"),
    ]
    values = re.search(r"VALUES\s*(\(.*\))\s*$", gold, re.I | re.S)
    if values:
        pool.append(("wrong_aggregate", f"{gold}, {values.group(1)}"))
    where = re.search(r"\s+WHERE\s+.*$", gold, re.I | re.S)
    if where:
        pool.append(("wrong_column", gold[: where.start()]))
    return pool


def to_task(record: dict[str, Any], split: str, index: int, tag: str) -> Task:
    kind = record["type"][0]
    modify = task_kind(record) != "SELECT"
    reference = record["label"][0].strip().rstrip(";") if modify else _answer(record["label"])
    flaws = _modify_pool(record) if modify else _select_pool(record)
    pool = [
        {"flaw": flaw, "source": text}
        for flaw, text in flaws
        if text != reference and sum(s for s, _ in artifact_scores(record, text).values()) < 1.0 - 1e-9
    ]
    return Task(
        task_id=f"dbbench-{tag}-{index:03d}",
        domain="dbbench",
        version="upstream",
        difficulty=_difficulty(kind),
        split=split,
        template=f"{kind}:{tag}",
        prompt=prompt_of(record),
        payload={"record": record, "reference": reference, "pool": pool},
    )


def _pick(records: list[dict[str, Any]], n: int) -> list[int]:
    """``n`` indices, round-robin over the record types in a content-hash order (deterministic)."""
    by_type: dict[str, list[int]] = {}
    order = sorted(
        range(len(records)),
        key=lambda i: hashlib.sha1(json.dumps(records[i], sort_keys=True).encode()).hexdigest(),
    )
    for i in order:
        by_type.setdefault(records[i]["type"][0], []).append(i)
    kinds = sorted(by_type)
    picked: list[int] = []
    depth = 0
    while len(picked) < n and any(depth < len(v) for v in by_type.values()):
        for kind in kinds:
            if depth < len(by_type[kind]) and len(picked) < n:
                picked.append(by_type[kind][depth])
        depth += 1
    return sorted(picked)


@cache
def load_upstream(data_path: str, n_train: int, n_eval: int) -> tuple[Task, ...]:
    root = Path(data_path)
    tasks: list[Task] = []
    for split, n in (("train", n_train), ("eval", n_eval)):
        path = root / FILES[split]
        if not path.is_file():
            raise FileNotFoundError(f"DB-Bench data_path {root}: missing {FILES[split]} (the {split} split)")
        records = [record for _, record in read_jsonl(path, RECORD_FIELDS)]
        if not records:
            raise TaskFileError(f"{path}: no records")
        tag = "std" if split == "eval" else "dev"
        tasks.extend(to_task(records[i], split, i, tag) for i in _pick(records, n))
    return tuple(tasks)
